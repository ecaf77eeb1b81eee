"""(d) Issue 12 §1 with the real Pi: the daemon opens a v1 file, Pi opens the same file (migrating
it in place: new ids, same inode, a longer file) and appends, then the daemon writes. Nothing may
be orphaned, nothing Pi wrote lost, and `<file>.v1.bak` must hold the original v1 bytes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from compactd.session import Session

from .conftest import FILLER
from .daemon import Daemon, DaemonError
from .harness import FakeModel, PiHome
from .test_pi_roundtrip import DAEMON_SETTINGS, assert_contexts_equal, text_of

CONCURRENT_MODIFICATION = -32016


def write_v1(path: Path, cwd: Path) -> bytes:
    """A version-1 file: no `version`, entries without `id`/`parentId` (spec F-2, F-25)."""
    lines: list[dict[str, Any]] = [
        {"type": "session", "id": "0199a0b1-1111-7000-8000-000000000001", "timestamp": "2026-01-01T00:00:00.000Z",
         "cwd": str(cwd)}
    ]
    for turn in range(4):
        ts = 1767225600000 + turn * 1000
        lines.append({"type": "message", "timestamp": "2026-01-01T00:00:01.000Z",
                      "message": {"role": "user", "content": [{"type": "text", "text": f"Old turn {turn}. {FILLER}"}],
                                  "timestamp": ts}})
        lines.append({"type": "message", "timestamp": "2026-01-01T00:00:02.000Z",
                      "message": {"role": "assistant", "content": [{"type": "text", "text": f"Old answer {turn}."}],
                                  "api": "openai-completions", "provider": "fake", "model": "fake-model",
                                  "usage": {"input": 100, "output": 10, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 110,
                                            "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}},
                                  "stopReason": "stop", "timestamp": ts + 500}})
    data = "".join(json.dumps(line) + "\n" for line in lines).encode()
    path.write_bytes(data)
    return data


def test_pi_migrates_in_place_while_the_daemon_has_the_file_open(pi_home: PiHome, fake_model: FakeModel) -> None:
    path = pi_home.session_dir / "legacy-v1.jsonl"
    original = write_v1(path, pi_home.cwd)
    with Daemon(fake_model.fake, str(pi_home.agent_dir), DAEMON_SETTINGS) as daemon:
        opened = daemon.call("session/open", {"path": str(path)})
        assert opened["migratedFrom"] == 1

        pi_home.drive([{"op": "prompt", "text": "Pi was here."}], session_file=path)
        pi_view = [json.loads(line) for line in path.read_bytes().splitlines()]
        assert pi_view[0].get("version") == 3  # Pi migrated the file in place and appended

        custom = {"type": "custom", "customType": "interop", "data": {"after": "pi"}}
        try:
            daemon.call("session/append", {"sessionId": opened["sessionId"], "entries": [custom]})
            appended = True
        except DaemonError as error:  # refusing a stale view is allowed; writing on one is not
            assert error.code == CONCURRENT_MODIFICATION
            appended = False

    session = Session.open(path)
    assert session.warnings == []
    ids = {e["id"] for e in session.entries}
    orphans = [e for e in session.entries if e["parentId"] is not None and e["parentId"] not in ids]
    assert orphans == []
    # Everything Pi wrote is still there, under Pi's ids.
    by_id = {e["id"]: e for e in session.entries}
    for entry in pi_view[1:]:
        assert by_id.get(entry["id"]) == entry
    assert any(e["type"] == "message" and text_of(e["message"]) == "Pi was here." for e in session.entries)
    if appended:
        mine = [e for e in session.entries if e["type"] == "custom" and e.get("customType") == "interop"]
        assert len(mine) == 1 and mine[0]["parentId"] == pi_view[-1]["id"]  # on Pi's leaf, not orphaned
    backup = path.with_name(path.name + ".v1.bak")
    if backup.exists():
        assert backup.read_bytes() == original
    assert_contexts_equal(pi_home, path)
