"""Embedded extractive summarizer: structure, verbatim evidence, determinism, budget."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import pytest

from compactd.summarize.base import SummaryKind
from compactd.summarize.extractive import (
    BRANCH_HEADINGS,
    HISTORY_HEADINGS,
    TURN_PREFIX_HEADINGS,
    ExtractiveSummarizer,
    extract_summary,
)
from tests.support.summarizers import make_request

REPO_ROOT = Path(__file__).resolve().parents[2]
FIXTURE = REPO_ROOT / "tests" / "fixtures" / "pi-before-compaction.v1.jsonl"

TRACEBACK = (
    "Traceback (most recent call last):\n"
    '  File "src/auth/session.py", line 42, in load_session\n'
    "    user = data['user_id']\n"
    "KeyError: 'user_id'\n\nCommand exited with code 1"
)
TS_ERROR = "src/web/api.ts(3,5): error TS2322: Type 'string' is not assignable to type 'number'."


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 1}


def assistant(*blocks: dict[str, Any]) -> dict[str, Any]:
    return {"role": "assistant", "content": list(blocks), "stopReason": "toolUse", "timestamp": 2}


def text(t: str) -> dict[str, Any]:
    return {"type": "text", "text": t}


def call(cid: str, name: str, **args: Any) -> dict[str, Any]:
    return {"type": "toolCall", "id": cid, "name": name, "arguments": args}


def result(cid: str, name: str, out: str, is_error: bool = False) -> dict[str, Any]:
    return {
        "role": "toolResult",
        "toolCallId": cid,
        "toolName": name,
        "content": [{"type": "text", "text": out}],
        "isError": is_error,
        "timestamp": 3,
    }


CONVERSATION = [
    user(
        "Fix the failing login test in tests/test_auth.py. Don't change the public API of "
        "auth.login(). We must keep Python 3.11 support."
    ),
    assistant(
        {"type": "thinking", "thinking": "private reasoning"},
        text("Let me look at the test first."),
        call("c1", "read", path="tests/test_auth.py"),
    ),
    result("c1", "read", "def test_login():\n    assert login('bob') is not None  # error-free file"),
    assistant(call("c2", "bash", command="pytest tests/test_auth.py -q")),
    result("c2", "bash", TRACEBACK, is_error=True),
    assistant(
        text("I decided to use dict.get instead of indexing because old sessions lack the key."),
        call(
            "c3", "edit", path="src/auth/session.py", oldText="data['user_id']", newText="data.get('user_id')"
        ),
    ),
    result("c3", "edit", "Successfully replaced text in src/auth/session.py."),
    assistant(call("c4", "bash", command="npm run typecheck")),
    result("c4", "bash", TS_ERROR + "\nCommand exited with code 2", is_error=True),
    user("ok"),
    user("Now also document the change in docs/auth.md and rerun `pytest -q`."),
    assistant(text("Writing the docs now."), call("c5", "write", path="docs/auth.md", content="# Auth\n")),
]


def headings(summary: str) -> list[str]:
    return [ln for ln in summary.splitlines() if ln.startswith("#")]


def required_headings(summary: str) -> list[str]:
    """The headings without the optional last one (the user's messages)."""
    return [h for h in headings(summary) if h != "## User Messages"]


def section(summary: str, heading: str) -> str:
    start = summary.index(heading + "\n") + len(heading) + 1
    nxt = re.search(r"^#{2,3} ", summary[start:], re.M)
    return summary[start : start + nxt.start() if nxt else len(summary)].strip()


def tokens(s: str) -> int:
    return math.ceil(len(s.encode("utf-16-le")) // 2 / 4)


# -- structure ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("kind", "expected"),
    [
        (SummaryKind.HISTORY, HISTORY_HEADINGS),
        (SummaryKind.BRANCH, BRANCH_HEADINGS),
        (SummaryKind.TURN_PREFIX, TURN_PREFIX_HEADINGS),
    ],
)
def test_exact_headings_in_order(kind: SummaryKind, expected: tuple[str, ...]) -> None:
    out = extract_summary(make_request(kind=kind, messages=CONVERSATION))
    # The required headings in order; history and branch summaries end with the user's messages.
    optional = [] if kind == SummaryKind.TURN_PREFIX else ["## User Messages"]
    assert headings(out) == list(expected) + optional


def test_history_headings_match_the_spec_format() -> None:
    assert HISTORY_HEADINGS == (
        "## Goal",
        "## Constraints & Preferences",
        "## Progress",
        "### Done",
        "### In Progress",
        "### Blocked",
        "## Key Decisions",
        "## Next Steps",
        "## Critical Context",
    )
    assert "## Critical Context" not in BRANCH_HEADINGS
    assert TURN_PREFIX_HEADINGS == ("## Original Request", "## Early Progress", "## Context for Suffix")


def test_empty_conversation_still_has_every_heading_and_none_markers() -> None:
    out = extract_summary(make_request(messages=[], prompt="no conversation here"))
    assert required_headings(out) == list(HISTORY_HEADINGS)
    assert section(out, "## Constraints & Preferences") == "(none)"
    assert section(out, "## Critical Context") == "(none)"


# -- evidence ------------------------------------------------------------------------------------
def test_history_sections_are_filled_from_evidence() -> None:
    out = extract_summary(make_request(messages=CONVERSATION))
    goal = section(out, "## Goal")
    assert "Fix the failing login test in tests/test_auth.py." in goal
    assert "document the change in docs/auth.md" in goal  # several goals
    assert "ok" not in goal.split("\n")  # acknowledgements are not goals
    constraints = section(out, "## Constraints & Preferences")
    assert "- Don't change the public API of auth.login()." in constraints
    assert "- We must keep Python 3.11 support." in constraints
    done = section(out, "### Done")
    assert "- [x] Edited src/auth/session.py" in done
    assert "tests/test_auth.py" not in done  # reading is not progress
    in_progress = section(out, "### In Progress")
    assert "- [ ] Wrote docs/auth.md (no result yet)" in in_progress
    # The conversation stops mid-work: the open request and what the last step was doing.
    assert "- [ ] Working on: Now also document the change in docs/auth.md" in in_progress
    assert "- [ ] Last step: Writing the docs now. — write docs/auth.md" in in_progress
    blocked = section(out, "### Blocked")
    assert "- `pytest tests/test_auth.py -q` failed: KeyError: 'user_id'" in blocked
    assert f"- `npm run typecheck` failed: {TS_ERROR}" in blocked
    decisions = section(out, "## Key Decisions")
    assert (
        "**I decided to use dict.get instead of indexing**: because old sessions lack the key." in decisions
    )
    nxt = section(out, "## Next Steps")
    assert nxt.startswith("1. Finish: Now also document the change in docs/auth.md and rerun `pytest -q`.")
    assert f"Fix: {TS_ERROR} (from `npm run typecheck`)" in nxt
    critical = section(out, "## Critical Context")
    assert "KeyError: 'user_id'" in critical and TS_ERROR in critical
    assert "Files changed: src/auth/session.py" in critical
    assert "auth.login()" in critical  # function names preserved
    assert "private reasoning" not in out  # thinking is never summarized


def test_error_resolved_by_a_later_success_is_not_blocked() -> None:
    msgs = [
        user("Make the tests pass"),
        assistant(call("a", "bash", command="pytest -q")),
        result("a", "bash", "E   AssertionError: expected 3\nCommand exited with code 1", is_error=True),
        assistant(call("b", "edit", path="src/calc.py", oldText="2", newText="3")),
        result("b", "edit", "ok"),
        assistant(call("c", "bash", command="pytest -q")),
        result("c", "bash", "3 passed"),
    ]
    out = extract_summary(make_request(messages=msgs))
    assert section(out, "### Blocked") == "(none)"
    done = section(out, "### Done")
    # Resolved: recorded as fixed (the exact error is kept for recall), never as blocking.
    assert "- [x] Fixed: AssertionError: expected 3 (from `pytest -q`)" in done  # pytest's "E" marker dropped
    assert "- [x] `pytest` passes" in done
    assert "AssertionError" not in section(out, "## Next Steps") + section(out, "## Critical Context")


def test_error_text_without_is_error_flag_is_detected_for_commands() -> None:
    msgs = [
        user("Build it"),
        assistant(call("a", "bash", command="make")),
        result(
            "a",
            "bash",
            "gcc -c main.c\nmain.c:3:1: error: expected ';' before '}' token\nCommand exited with code 2",
        ),
    ]
    out = extract_summary(make_request(messages=msgs))
    assert "- `make` failed: main.c:3:1: error: expected ';' before '}' token" in section(out, "### Blocked")


def test_user_bash_commands_count_as_work() -> None:
    msgs = [
        user("Check the repo"),
        user("Ran `npm install`\n```\nadded 3 packages\n```"),
        user("Ran `cargo build`\n```\nerror[E0308]: mismatched types\n```\n\nCommand exited with code 101"),
    ]
    out = extract_summary(make_request(messages=msgs))
    assert "- [x] Ran `npm install`" in section(out, "### Done")
    assert "- `cargo build` failed: error[E0308]: mismatched types" in section(out, "### Blocked")
    assert "npm install" not in section(out, "## Goal")


def test_read_only_commands_are_neither_progress_nor_blockers() -> None:
    msgs = [
        user("Find the handler"),
        assistant(call("a", "bash", command='grep -n "onSubmit\\|onInput" src/ui.ts | head -5')),
        result("a", "bash", "(no output)\n\nCommand exited with code 1", is_error=True),
        assistant(call("b", "bash", command="cd /repo && git status")),
        result("b", "bash", "On branch main"),
        assistant(call("c", "bash", command="cd /repo && npm test")),
        result("c", "bash", "ok"),
    ]
    out = extract_summary(make_request(messages=msgs))
    assert section(out, "### Done") == "- [x] `npm test` passes"  # a check that ran, not a chore
    assert section(out, "### Blocked") == "(none)"


def test_branch_summary_has_no_critical_context_but_keeps_errors() -> None:
    out = extract_summary(make_request(kind=SummaryKind.BRANCH, messages=CONVERSATION))
    assert "## Critical Context" not in out
    assert "KeyError: 'user_id'" in section(out, "### Blocked")


def test_turn_prefix_keeps_the_original_request_verbatim() -> None:
    out = extract_summary(make_request(kind=SummaryKind.TURN_PREFIX, messages=CONVERSATION[:7]))
    assert section(out, "## Original Request") == CONVERSATION[0]["content"][0]["text"]
    early = section(out, "## Early Progress")
    assert "- Edited src/auth/session.py" in early
    assert "- `pytest tests/test_auth.py -q` failed: KeyError: 'user_id'" in early
    assert "I decided to use dict.get" in section(out, "## Context for Suffix")


# -- update mode -------------------------------------------------------------------------------
def test_update_keeps_previous_items_and_adds_new_ones() -> None:
    previous = extract_summary(make_request(messages=CONVERSATION[:9]))
    previous += "\n\n<read-files>\ntests/test_auth.py\n</read-files>"
    out = extract_summary(make_request(messages=CONVERSATION[9:], previous_summary=previous))
    assert required_headings(out) == list(HISTORY_HEADINGS)
    assert "Fix the failing login test in tests/test_auth.py." in section(out, "## Goal")
    assert "document the change in docs/auth.md" in section(out, "## Goal")
    assert "- [x] Edited src/auth/session.py" in section(out, "### Done")
    assert "- [ ] Wrote docs/auth.md (no result yet)" in section(out, "### In Progress")
    assert "- We must keep Python 3.11 support." in section(out, "## Constraints & Preferences")
    assert "KeyError: 'user_id'" in section(out, "### Blocked")
    # Next Steps is refreshed from the newest request.
    assert section(out, "## Next Steps").startswith("1. Finish: Now also document the change")
    assert "<read-files>" not in out  # file tags are appended by code, never carried by the summary
    assert out.count("Files changed:") == 1


def test_update_moves_in_progress_item_to_done_when_finished() -> None:
    previous = (
        "## Goal\nShip it\n\n## Constraints & Preferences\n(none)\n\n## Progress\n### Done\n(none)\n\n"
        "### In Progress\n- [ ] Edit src/app.py to add retries\n\n### Blocked\n(none)\n\n"
        "## Key Decisions\n(none)\n\n## Next Steps\n1. Add retries\n\n## Critical Context\n(none)"
    )
    msgs = [
        assistant(call("e", "edit", path="src/app.py", oldText="a", newText="b")),
        result("e", "edit", "done"),
    ]
    out = extract_summary(make_request(messages=msgs, previous_summary=previous))
    done = section(out, "### Done")
    assert "- [x] Edit src/app.py to add retries" in done and "- [x] Edited src/app.py" in done
    assert "Edit src/app.py to add retries" not in section(out, "### In Progress")
    assert section(out, "## Next Steps") == "1. Add retries"  # no new request: previous steps stay
    assert section(out, "## Goal") == "Ship it"


def test_summary_embedded_in_conversation_is_merged() -> None:
    embedded = (
        "The conversation history before this point was compacted into the following summary:\n\n"
        "<summary>\n## Goal\nMigrate the database\n\n## Progress\n### Done\n- [x] Wrote migrations/001.sql\n"
        "</summary>"
    )
    out = extract_summary(make_request(kind=SummaryKind.BRANCH, messages=[user(embedded), *CONVERSATION[:3]]))
    assert "Migrate the database" in section(out, "## Goal")
    assert "- [x] Wrote migrations/001.sql" in section(out, "### Done")
    assert "compacted into the following summary" not in out


def test_falls_back_to_the_serialized_conversation_in_the_prompt() -> None:
    prompt = (
        "<conversation>\n[User]: Rename parse_config() in src/config.py\n\n"
        "[Assistant]: Renaming it now.\n\n"
        '[Assistant tool calls]: edit(path="src/config.py", oldText="parse_config", '
        'newText="load_config")\n\n'
        "[Tool result]: Successfully replaced text in src/config.py.\n"
        "</conversation>\n\n<previous-summary>\n## Goal\nClean up config handling\n"
        "</previous-summary>\n\nUpdate it."
    )
    out = extract_summary(make_request(messages=[], prompt=prompt))
    goal = section(out, "## Goal")
    assert "Clean up config handling" in goal and "Rename parse_config() in src/config.py" in goal
    assert "- [x] Edited src/config.py" in section(out, "### Done")
    assert "parse_config()" in section(out, "## Critical Context")


# -- determinism, streaming, budget --------------------------------------------------------------
async def test_deterministic_and_streamed_in_sections() -> None:
    summarizer = ExtractiveSummarizer()
    chunks: list[str] = []
    first = await summarizer.summarize(make_request(messages=CONVERSATION), chunks.append)
    second = await summarizer.summarize(make_request(messages=CONVERSATION))
    assert first.text == second.text
    assert "".join(chunks) == first.text
    assert len(chunks) >= 5  # one per top-level section
    assert first.usage is None


@pytest.mark.parametrize("budget", [140, 200, 300, 600, 13107])
def test_output_stays_within_the_token_budget(budget: int) -> None:
    many = list(CONVERSATION)
    for i in range(200):
        many += [
            assistant(
                text(f"Step {i}: I chose approach {i} rather than {i + 1} because it is simpler."),
                call(f"e{i}", "edit", path=f"src/module_{i}/file_{i}.py", oldText="x", newText="y"),
            ),
            result(f"e{i}", "edit", "ok"),
        ]
    out = extract_summary(make_request(messages=many, max_tokens=budget))
    assert tokens(out) <= budget
    assert required_headings(out) == list(HISTORY_HEADINGS)
    # Next Steps has the highest priority: it survives every budget that can hold it.
    assert "1. Finish: Now also document the change in docs/auth.md" in section(out, "## Next Steps")


def test_lowest_priority_lines_go_first() -> None:
    full = extract_summary(make_request(messages=CONVERSATION))
    tight = extract_summary(make_request(messages=CONVERSATION, max_tokens=tokens(full) - 30))
    assert "Mentioned:" in full and "Mentioned:" not in tight
    assert "KeyError: 'user_id'" in section(tight, "### Blocked")


def test_headings_survive_an_impossible_budget() -> None:
    out = extract_summary(make_request(messages=CONVERSATION, max_tokens=1))
    assert required_headings(out) == list(HISTORY_HEADINGS)


def test_real_pi_session_fixture() -> None:
    messages = []
    edited: set[str] = set()
    for line in FIXTURE.read_text(encoding="utf-8").splitlines():
        entry = json.loads(line)
        msg = entry.get("message")
        if entry.get("type") == "message" and msg.get("role") in ("user", "assistant", "toolResult"):
            messages.append(msg)
            for block in msg.get("content") if isinstance(msg.get("content"), list) else []:
                if block.get("type") == "toolCall" and block.get("name") in ("edit", "write"):
                    edited.add(block["arguments"].get("path"))
    for budget in (13107, 1000):
        out = extract_summary(make_request(messages=messages, max_tokens=budget))
        assert required_headings(out) == list(HISTORY_HEADINGS)
        assert tokens(out) <= budget
        root = re.search(r"^- Project root: (\S+) ", out, re.M)
        for ln in section(out, "### Done").splitlines():
            m = re.match(r"- \[x\] (?:Edited|Wrote) (\S+?)(?::| \(×\d+\))?(?:\s|$)", ln)
            if m:  # paths are copied verbatim from the tool calls (shown relative to the stated root)
                assert m.group(1) in edited or (root and f"{root.group(1)}/{m.group(1)}" in edited)
    full = extract_summary(make_request(messages=messages))
    root = re.search(r"^- Project root: (/\S+) ", full, re.M)
    assert root and any(p.startswith(root.group(1) + "/") for p in edited)
    assert re.search(r"- \[x\] (Edited|Wrote) \S", full)
    assert extract_summary(make_request(messages=messages)) == extract_summary(
        make_request(messages=messages)
    )
