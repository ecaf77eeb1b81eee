"""Evidence helpers of the embedded summarizer: user message kinds, checks, file moves."""

from __future__ import annotations

import pytest

from compactd.summarize.embedded.commands import command_family, file_moves
from compactd.summarize.embedded.dialog import classify_user, constraint_sentences


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("ok", "ack"),
        ("jesus, everything works, you are a monster", "ack"),
        ("ignore that, I stopped it. can probably leave it", "ack"),
        ("continue investigate give me a root cause analysis", "ack"),  # more of the same task
        ("why are there 2 subscription handlers?", "question"),
        ("any other such pathing issues possibly?", "question"),
        ("btw, can we make it so we keep the old code around for reference?", "task"),
        ("move @packages/coding-agent/src/utils/config.ts to src/", "task"),
        ("Cache the parsed config so it stops re-reading the file; it must be invalidated on change.", "task"),
        ("i would only want e2e tests for AgentSession, anything else is shitty.", "rule"),
        ("Keep the public API unchanged.", "rule"),
        ("One more rule: never push to main directly.", "rule"),
        ("no, that's horrible. tools -> core/tools, tui -> modes/interactive/components", "correction"),
        ("wait, wtf this doesn't look right to me? why would we queue and then append?", "correction"),
        ("like, can't we make this even better? a showSelector() that takes a function", "direction"),
    ],
)
def test_user_message_kinds(text: str, kind: str) -> None:
    assert classify_user(text) == kind


def test_the_opening_ask_of_a_task_is_not_a_rule() -> None:
    text = "Add a `--since` option: it should only export newer rows. Don't add dependencies."
    assert constraint_sentences(text) == ["Don't add dependencies."]


@pytest.mark.parametrize(
    ("command", "family"),
    [
        ("cd /repo && npm run check 2>&1 | tail -20", "npm run check"),
        ("python -m pytest -q tests/test_a.py", "pytest"),
        ("pytest -q", "pytest"),
        ("ruff check src tests && mypy src", "ruff"),
        ("npx tsc --noEmit", "tsc"),
        ("git status", None),
        ("npx tsx src/cli.ts --help", None),
    ],
)
def test_command_families(command: str, family: str | None) -> None:
    assert command_family(command) == family


def test_file_moves_of_mv_git_mv_rm_and_git_rm() -> None:
    assert file_moves("git mv src/a.py src/b.py && git rm -q src/c.py") == ([("src/a.py", "src/b.py")], ["src/c.py"])
    assert file_moves("cd /repo/src && mv main-new.ts main.ts && mv cli-new.ts cli.ts") == (
        [("main-new.ts", "main.ts"), ("cli-new.ts", "cli.ts")], [])
    assert file_moves("cd /repo/src && mv utils/config.ts .") == ([("utils/config.ts", "/repo/src/config.ts")], [])
    assert file_moves("mv a.ts b.ts lib/") == ([("a.ts", "lib/a.ts"), ("b.ts", "lib/b.ts")], [])
    assert file_moves("rm /tmp/out.html 2>/dev/null; echo done") == ([], ["/tmp/out.html"])
    # loops and substitutions are not guessed at
    assert file_moves('for f in *.ts; do mv "$f" ../x/; done') == ([], [])


def test_a_rule_starting_with_no_is_not_a_correction() -> None:
    assert classify_user("No new dependencies, please.") == "rule"
    assert classify_user("No, don't use a global dict — it leaks between tests.") == "correction"
