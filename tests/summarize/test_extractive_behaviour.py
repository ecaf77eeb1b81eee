"""Embedded summarizer, issue 13: recency and resolution, corrections, carried-over summaries, noise,
next steps from the open work, renames and deletions."""

from __future__ import annotations

import json
import re
from typing import Any

from compactd.compaction.prepare import messages_of, prepare_compaction
from compactd.compaction.settings import CompactionSettings
from compactd.samples import sample_session_text
from compactd.session.context import convert_to_llm
from compactd.summarize.extractive import extract_summary
from tests.support.summarizers import make_request

from .test_extractive import assistant, call, result, section, text, user

PI_PREVIOUS = """# Context Checkpoint: Refactoring

## Branch
`refactor` in `/work/app`

## Goal
Split the run modes behind one `AgentSession`.

## Completed Work
- `AgentSession` class created (`src/core/agent-session.ts`)

## User Preferences
- **E2E tests only** - no unit tests
- `npm run check` must pass

## Next Steps
1. Move the files into `core/`
"""


def summarize(msgs: list[dict[str, Any]], previous: str | None = None) -> str:
    return extract_summary(make_request(messages=msgs, previous_summary=previous))


def test_a_correction_rejects_the_earlier_plan_and_records_what_was_adopted() -> None:
    msgs = [
        user("Fix the race in src/session.ts when a bash command runs during streaming."),
        assistant(text("The fix is simple: use `queueMessage` instead of `appendMessage` while streaming.")),
        user("wait, why would we queue and then append? we just wait for the agent to be idle."),
        assistant(
            text("You're right. We just want to:\n1. Keep the message in `_pending` while streaming\n"
                 "2. Flush `_pending` on `agent_end`"),
            call("e", "edit", path="src/session.ts", oldText="a", newText="b"),
        ),
        result("e", "edit", "ok"),
    ]
    out = summarize(msgs)
    decisions = section(out, "## Key Decisions")
    assert "- **Rejected by the user**: The fix is simple: use `queueMessage` instead of `appendMessage`" in decisions
    # the user's reason, in the user's words, on the rejection itself
    rejected = next(ln for ln in decisions.splitlines() if ln.startswith("- **Rejected by the user**"))
    assert rejected.endswith("— why would we queue and then append? we just wait for the agent to be idle.")
    assert "- **Adopted instead**: Keep the message in `_pending` while streaming; Flush `_pending` on `agent_end`" in decisions
    # the rejected plan is never stated as a plain decision
    plain = [ln for ln in decisions.splitlines() if "queueMessage" in ln and "Rejected" not in ln and "User" not in ln]
    assert plain == []
    assert "Reworking it after the user's correction" in section(out, "### In Progress")


def test_pastes_acknowledgements_questions_and_asides_are_not_goals() -> None:
    paste = '{"type":"message","timestamp":"2025-12-09T00:20:16.036Z","message":{"role":"assistant"}}'
    msgs = [
        user("ok"),
        user(f"then we need to tackle this bash issue:\n\n{paste}\n\nthis results in\n\n"
             " Error: 400 `tool_use` ids were found without `tool_result` blocks\n\n"
             "reason being that the bash message lands between the tool call and its result."),
        user("wow, it works"),
        user("why are there 2 subscription handlers?"),
        user("ignore that, I stopped it. can probably leave it"),
    ]
    out = summarize(msgs)
    goal = section(out, "## Goal")
    assert goal.startswith("then we need to tackle this bash issue: reason being that the bash message lands")
    for noise in ('{"type"', "wow", "subscription handlers", "leave it", "Error: 400"):
        assert noise not in goal
    # the error the user quoted is evidence, kept verbatim
    assert "- Error reported by the user: Error: 400 `tool_use` ids were found without `tool_result` blocks" in (
        section(out, "## Critical Context"))
    assert "tool_use" not in section(out, "## Constraints & Preferences")


def test_rules_are_constraints_and_not_goals() -> None:
    out = summarize([
        user("Add a `--since` flag to the export command."),
        user("i would only want e2e tests for this, anything else is noise."),
        user("Keep the public API unchanged."),
    ])
    assert "only want e2e tests" not in section(out, "## Goal")
    constraints = section(out, "## Constraints & Preferences")
    assert "- i would only want e2e tests for this, anything else is noise." in constraints
    assert "- Keep the public API unchanged." in constraints
    assert "Add a `--since` flag" not in constraints  # the task itself is not a rule


def test_interruptions_are_neither_work_nor_blockers() -> None:
    msgs = [
        user("Run the checks."),
        assistant(call("a", "bash", command="npm run check")),
        result("a", "bash", "Command aborted", is_error=True),
    ]
    out = summarize(msgs)
    assert "aborted" not in out.lower()
    assert section(out, "### Blocked") == "(none)"


def test_an_error_is_resolved_by_a_later_run_of_the_same_check() -> None:
    msgs = [
        user("Make the types check."),
        assistant(call("a", "bash", command="cd /repo && npm run check 2>&1 | tail -20")),
        result("a", "bash", "src/a.ts(3,1): error TS2304: Cannot find name 'x'.\nCommand exited with code 2",
               is_error=True),
        assistant(call("b", "edit", path="src/a.ts", oldText="x", newText="y")),
        result("b", "edit", "ok"),
        assistant(call("c", "bash", command="cd /repo && npm run check 2>&1 | grep -E 'error|warning'")),
        result("c", "bash", "Checked 12 files. No fixes applied."),
    ]
    out = summarize(msgs)
    assert section(out, "### Blocked") == "(none)"
    assert "TS2304" not in section(out, "## Next Steps")
    done = section(out, "### Done")
    assert "- [x] Fixed: src/a.ts(3,1): error TS2304: Cannot find name 'x'." in done
    assert "- [x] `npm run check` passes" in done


def test_an_error_not_resolved_stays_blocked_and_is_a_next_step() -> None:
    msgs = [
        user("Make the types check."),
        assistant(call("a", "bash", command="mypy src")),
        result("a", "bash", 'src/m.py:3: error: Name "old" is not defined  [name-defined]\nCommand exited with code 1',
               is_error=True),
        assistant(call("c", "bash", command='git commit -am "WIP"')),
        result("c", "bash", "[main 1a2b3c] WIP"),
    ]
    out = summarize(msgs)
    line = 'src/m.py:3: error: Name "old" is not defined  [name-defined]'
    assert f"- `mypy src` failed: {line}" in section(out, "### Blocked")
    assert f"Fix: {line} (from `mypy src`)" in section(out, "## Next Steps")


def test_renames_and_deletions_are_tracked_in_the_text() -> None:
    msgs = [
        user("Rename helpers and drop the dead module."),
        assistant(call("a", "edit", path="src/pkg/helpers.py", oldText="a", newText="b")),
        result("a", "edit", "ok"),
        assistant(call("b", "bash", command="git mv src/pkg/helpers.py src/pkg/util.py && git rm -q src/pkg/dead.py")),
        result("b", "bash", "(no output)"),
        assistant(call("c", "bash", command="cd /repo/src && mv main-new.ts main.ts && rm old.ts")),
        result("c", "bash", ""),
        assistant(call("d", "bash", command="cd /repo/src && mv utils/config.ts .")),
        result("d", "bash", ""),
    ]
    out = summarize(msgs)
    done = section(out, "### Done")
    assert "- [x] Renamed src/pkg/helpers.py → src/pkg/util.py; Deleted src/pkg/dead.py" in done
    assert "- [x] Renamed main-new.ts → main.ts; Deleted old.ts" in done
    assert "- [x] Renamed utils/config.ts → /repo/src/config.ts" in done
    critical = section(out, "## Critical Context")
    files_changed = next(ln for ln in critical.splitlines() if ln.startswith("- Files changed:"))
    assert "src/pkg/util.py" in files_changed and "helpers.py" not in files_changed  # the new name only
    assert "- Files renamed: src/pkg/helpers.py → src/pkg/util.py, main-new.ts → main.ts" in critical
    assert "- Files deleted: src/pkg/dead.py, old.ts" in critical


def test_every_section_of_a_previous_summary_in_pis_layout_is_carried_forward() -> None:
    msgs = [
        user("Now move the files into core/ and fix the imports."),
        assistant(call("a", "bash", command="cd /work/app/src && mv session.ts core/")),
        result("a", "bash", ""),
        assistant(text("Moved. Now the imports."), call("b", "edit", path="src/core/session.ts", oldText="a",
                                                        newText="b")),
        result("b", "edit", "ok"),
        assistant(call("c", "bash", command="npm run check")),
        result("c", "bash", "ok"),
        assistant(call("d", "edit", path="src/index.ts", oldText="a", newText="b")),
        result("d", "edit", "ok"),
        assistant(call("e", "bash", command="npm test")),
    ]
    out = summarize(msgs, PI_PREVIOUS)
    assert section(out, "## Goal").startswith("- Split the run modes behind one `AgentSession`.")
    constraints = section(out, "## Constraints & Preferences")
    assert "- **E2E tests only** - no unit tests" in constraints
    assert "- `npm run check` must pass" in constraints
    assert "- [x] `AgentSession` class created (`src/core/agent-session.ts`)" in section(out, "### Done")
    assert "- Branch: `refactor` in `/work/app`" in section(out, "## Critical Context")
    nxt = section(out, "## Next Steps")
    # a new open step replaces the old plan: finish the task, check again after the latest edit
    assert nxt.splitlines()[0] == "1. Finish: Now move the files into core/ and fix the imports."
    assert "Run `npm run check` again" in nxt
    assert "Move the files into `core/`" not in nxt
    assert "- [ ] Ran `npm test` (no result yet)" in section(out, "### In Progress")


def test_next_step_commits_changes_made_after_the_last_commit() -> None:
    msgs = [
        user("Tidy the parser."),
        assistant(call("a", "bash", command='git add -A && git commit -m "Split the parser into modules"')),
        result("a", "bash", "[main 1] Split the parser into modules"),
        assistant(call("b", "edit", path="src/parser.ts", oldText="a", newText="b")),
        result("b", "edit", "ok"),
        assistant(text("Done, the parser is tidy.")),
    ]
    out = summarize(msgs)
    assert '- [x] Committed "Split the parser into modules"' in section(out, "### Done")  # verbatim
    assert "Commit the changes to src/parser.ts" in section(out, "## Next Steps")
    assert "- [ ] Uncommitted changes: src/parser.ts" in section(out, "### In Progress")


def test_an_answered_conversation_offers_its_next_steps_instead_of_repeating_the_goal() -> None:
    msgs = [
        user("Create the rpc mode."),
        assistant(call("a", "write", path="src/modes/rpc-mode.ts", content="x")),
        result("a", "write", "ok"),
        assistant(text("Done.\n\nNext steps:\n1. Delete old code (`main.ts`)\n2. Rename `main-new.ts` → `main.ts`")),
    ]
    out = summarize(msgs)
    nxt = section(out, "## Next Steps")
    assert nxt == "1. Delete old code (`main.ts`)\n2. Rename `main-new.ts` → `main.ts`"
    assert "Create the rpc mode" not in nxt
    assert section(out, "### In Progress") == "(none)"
    assert not re.search(r"^- \[ \] Working on", out, re.M)


def test_the_shipped_samples_next_steps_do_not_repeat_its_goal() -> None:
    """`compactd demo` compacts this sample: Next Steps used to repeat the Goal."""
    path = [json.loads(line) for line in sample_session_text().splitlines()[1:]]
    entries = {e["id"]: e for e in path}
    leaf, branch = path[-1], []
    node: dict[str, Any] | None = leaf
    while node is not None:
        branch.append(node)
        node = entries.get(node.get("parentId") or "")
    prep = prepare_compaction(branch[::-1], CompactionSettings(keep_recent_tokens=2000))
    assert prep
    out = summarize(convert_to_llm(messages_of(prep.messages_to_summarize)))  # type: ignore[union-attr]
    goals = [g.lstrip("- ") for g in section(out, "## Goal").splitlines()]
    nxt = section(out, "## Next Steps")
    assert goals and nxt != "(none)"
    assert not any(g in nxt for g in goals)


def test_a_commit_whose_push_failed_is_still_a_commit() -> None:
    msgs = [
        user("Commit and push."),
        assistant(call("a", "bash", command='git add -A && git commit -m "Add syntax highlighting" && git push')),
        result("a", "bash", "[main 4f3e2d1] Add syntax highlighting\n 2 files changed\n"
               "fatal: The upstream branch of your current branch does not match\nCommand exited with code 128",
               is_error=True),
    ]
    out = summarize(msgs)
    assert '- [x] Committed "Add syntax highlighting"' in section(out, "### Done")
    assert "fatal: The upstream branch" in section(out, "### Blocked")
