"""D-29 in the engine: on an oh-my-pi file (title slot line before the header) compaction and branch
summaries follow oh-my-pi 18 — its transcript in the prompt, its entry fields and `<files>` block —
unless `compat` says otherwise. Real files and a real local OpenAI-compatible server."""

from __future__ import annotations

import json
import re
from pathlib import Path

from compactd.compaction import omp
from compactd.engine.compactor import compact
from compactd.engine.navigator import navigate
from compactd.engine.settings import build_summarizer
from compactd.session import Session

from tests.support.fake_openai import FakeOpenAI, Reply

from .builders import HISTORY_TEXT, new_session, settings, turn
from .test_compactor import KEEP_SMALL, prompt_of

BRANCH_TEXT = """## Goal
Try the other approach.

## Constraints & Preferences
- (none)

## Progress
### Done
- [x] Looked at the module

### In Progress
- [ ] (none)

### Blocked
- (none)

## Key Decisions
- **Stay**: the first approach is better

## Next Steps
1. Continue
"""


def omp_file(tmp_path: Path, turns: int = 4) -> Path:
    """A session with `turns` turns, made an oh-my-pi file by its title slot line (QO-1)."""
    session = new_session(tmp_path, "made.jsonl")
    for n in range(1, turns + 1):
        turn(session, n)
    slot = b'{"type":"title","v":1,"title":"","updatedAt":"2026-01-01T00:00:00.000Z","pad":"'
    slot += b" " * (256 - len(slot) - 3) + b'"}\n'
    path = tmp_path / "omp.jsonl"
    path.write_bytes(slot + (tmp_path / "made.jsonl").read_bytes())
    return path


async def test_compaction_on_an_omp_file_is_omps(tmp_path: Path, fake: FakeOpenAI) -> None:
    path = omp_file(tmp_path)
    session = Session.open(path)
    st = settings(tmp_path, fake, compaction=KEEP_SMALL)
    fake.queue(Reply.stream(HISTORY_TEXT))
    result = await compact(session, st, build_summarizer(st, env={}))

    assert result.compat == "omp"
    prompt = prompt_of(fake.requests[0])
    # oh-my-pi's xml transcript, not Pi's [User]: lines
    assert prompt.startswith("<conversation>\n\n\nHuman: Request 1: please work on src/mod1.py.")
    assert '<invoke name="read"><parameter name="path">"src/mod1.py"</parameter></invoke>' in prompt
    assert "\n\nHuman: <tool_response>\ncontents of src/mod1.py" in prompt and "[User]:" not in prompt

    lines = path.read_bytes().splitlines()
    assert lines[0].startswith(b'{"type":"title"')  # the slot line is kept
    entry = json.loads(lines[-1])
    assert list(entry) == ["type", "id", "parentId", "timestamp", "summary", "shortSummary", "firstKeptEntryId",
                           "tokensBefore", "tokensAfter", "method", "details", "fromExtension"]
    assert entry["method"] == "soft" and entry["fromExtension"] is False
    assert entry["summary"].startswith(HISTORY_TEXT.rstrip())
    assert re.search(r"\n\n<files>\n# src/\nmod1\.py \(Read\)\n(mod\d\.py \(Read\)\n)*</files>\Z", entry["summary"])
    assert "<read-files>" not in entry["summary"]
    assert entry["shortSummary"] == "Ship the feature."
    kept = [e["message"] for e in Session.open(path).get_branch() if e.get("type") == "message"]
    kept = kept[[e["id"] for e in Session.open(path).get_branch() if e.get("type") == "message"].index(
        entry["firstKeptEntryId"]):]
    assert entry["tokensAfter"] == omp.tokens_after(entry["summary"], entry["tokensBefore"], kept)
    assert entry["details"] == {"readFiles": result.details["readFiles"], "modifiedFiles": []}


async def test_compat_pi_forces_pis_compaction_on_an_omp_file(tmp_path: Path, fake: FakeOpenAI) -> None:
    path = omp_file(tmp_path)
    session = Session.open(path)
    st = settings(tmp_path, fake, compaction=KEEP_SMALL, compat="pi")
    fake.queue(Reply.stream(HISTORY_TEXT))
    result = await compact(session, st, build_summarizer(st, env={}))
    assert result.compat == "pi"
    assert prompt_of(fake.requests[0]).startswith("<conversation>\n[User]: Request 1")
    entry = json.loads(path.read_bytes().splitlines()[-1])
    assert entry["fromHook"] is False and "shortSummary" not in entry and "method" not in entry
    assert "<read-files>" in entry["summary"]


async def test_branch_summary_on_an_omp_file_keeps_tool_results_and_lists_files(
    tmp_path: Path, fake: FakeOpenAI
) -> None:
    path = omp_file(tmp_path, turns=3)
    session = Session.open(path)
    first_answer = session.get_branch()[3]["id"]  # the answer of turn 1
    st = settings(tmp_path, fake)
    fake.queue(Reply.stream(BRANCH_TEXT))
    result = await navigate(session, first_answer, st, build_summarizer(st, env={}), summarize=True)
    assert result.summary_entry_id
    prompt = prompt_of(fake.requests[0])
    assert "Human: <tool_response>\ncontents of src/mod2.py" in prompt  # Pi's B-5 would leave it out
    summary = session.by_id[result.summary_entry_id]["summary"]
    assert summary.endswith("<files>\n# src/\nmod2.py (Read)\nmod3.py (Read)\n</files>")
    assert session.by_id[result.summary_entry_id]["details"] == {
        "readFiles": ["src/mod2.py", "src/mod3.py"], "modifiedFiles": []}


async def test_a_hooks_compaction_on_an_omp_file_is_written_as_an_extensions(tmp_path: Path) -> None:
    from typing import Any

    from compactd.engine.hooks import Hooks
    from compactd.summarize.extractive import ExtractiveSummarizer

    class Supplies(Hooks):
        async def before_compact(self, event: dict[str, Any]) -> Any:
            assert event["preparation"]["compat"] == "omp"
            return {"compaction": {"summary": "From the editor.", "shortSummary": "Editor", "tokensBefore": 42,
                                   "firstKeptEntryId": event["preparation"]["firstKeptEntryId"],
                                   "details": {"kind": "custom"}}}

    path = omp_file(tmp_path)
    session = Session.open(path)
    st = settings(tmp_path, compaction=KEEP_SMALL)
    result = await compact(session, st, ExtractiveSummarizer(), hooks=Supplies())
    entry = json.loads(path.read_bytes().splitlines()[-1])
    assert result.from_hook and result.compat == "omp"
    # oh-my-pi's extension-made entries: fromExtension true, no method or tokensAfter (QO-7)
    assert list(entry) == ["type", "id", "parentId", "timestamp", "summary", "shortSummary", "firstKeptEntryId",
                           "tokensBefore", "details", "fromExtension"]
    assert entry["summary"] == "From the editor." and entry["shortSummary"] == "Editor"
    assert entry["fromExtension"] is True and entry["details"] == {"kind": "custom"}
