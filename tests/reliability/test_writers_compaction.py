"""Another process appends to the session file while a compaction is streaming (issue 8 item 2).

The other writer is a real second process holding its own Session on the same file, the way Pi
appends. Their lines must stay intact, be adopted before our compaction entry is written (D-18), and
end up after the kept boundary, visible in the rebuilt context (D-20)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import textwrap
from pathlib import Path

from compactd.engine.compactor import compact
from compactd.engine.settings import build_summarizer
from compactd.session import Session, build_session_context

from tests.engine.builders import HISTORY_TEXT, new_session, settings, turn
from tests.support.fake_openai import FakeOpenAI, Reply

OTHER_WRITER = textwrap.dedent(
    """
    import sys, time, pathlib
    from compactd.session import Session
    go = pathlib.Path(sys.argv[2])
    print("ready", flush=True)
    while not go.exists():  # started early so its start-up time does not race the stream
        time.sleep(0.005)
    session = Session.open(sys.argv[1])
    for text in ("from pi: first", "from pi: second"):
        print(session.append_message({"role": "user", "content": text, "timestamp": 1}), flush=True)
    """
)


async def test_external_appends_during_compaction_are_kept_and_adopted(tmp_path: Path) -> None:
    session = new_session(tmp_path)
    for n in range(6):
        turn(session, n, size=2000)
    path = session.path
    assert path is not None
    original = path.read_bytes()
    chunks = [HISTORY_TEXT[i : i + 40] for i in range(0, len(HISTORY_TEXT), 40)]
    go = tmp_path / "go"
    other = subprocess.Popen([sys.executable, "-c", OTHER_WRITER, str(path), str(go)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert other.stdout is not None
    assert await asyncio.to_thread(other.stdout.readline) == "ready\n"
    with FakeOpenAI() as fake:
        fake.queue(Reply.stream(chunks, chunk_delay=0.05))
        config = settings(tmp_path, fake, compaction={"keepRecentTokens": 600})
        task = asyncio.create_task(compact(session, config, build_summarizer(config, env={})))
        while not fake.requests:  # the model call is in flight
            await asyncio.sleep(0.01)
        go.touch()
        out, err = await asyncio.to_thread(other.communicate, timeout=120)
        assert other.returncode == 0, err
        theirs = out.split()
        assert len(theirs) == 2
        assert not task.done(), "the compaction must still be running when the other process writes"
        result = await task

    text = path.read_bytes()
    assert text.startswith(original)  # nothing of ours or theirs rewritten
    lines = [json.loads(line) for line in text.decode().splitlines()]  # no interleaved partial line
    ids = [line.get("id") for line in lines[1:]]
    assert ids[-3:] == [*theirs, result.entry_id]  # their entries, then our compaction after them
    assert session.external_appends and session.external_appends[-1].entry_ids == tuple(theirs)
    compaction = lines[-1]
    assert compaction["type"] == "compaction" and compaction["parentId"] == theirs[-1]

    reloaded = Session.open(path)
    assert reloaded.warnings == []
    context = build_session_context(reloaded.entries)
    assert context.entry_ids[0] == result.entry_id
    assert context.entry_ids[-2:] == theirs  # kept after the boundary, visible to the model
