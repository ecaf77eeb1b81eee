"""The Claude Code console-transcript → Pi converter (bench/quality/claude_console.py), on a synthetic
transcript shaped like a saved terminal session."""

from __future__ import annotations

import json
from pathlib import Path

import pytest


from bench.quality.claude_console import convert

from .converter_cli import convert_file

WELCOME = """\
claude
╭──────────────────────────────╮
│ ✻ Welcome to Claude Code!    │
│   cwd: /home/u/proj          │
╰──────────────────────────────╯

"""

TRANSCRIPT = WELCOME + """\
> an old session that a later welcome box ends

⏺ Old answer.

""" + WELCOME + """\
 Tips for getting started:

 1. Run /init to create a CLAUDE.md file

> the parser drops empty lines; fix it but keep the
  public API as it is

⏺ Let me look at the parser first.


⏺ Read(src/parse.py)…

  ⎿  Read 40 lines (ctrl+r to expand)


⏺ Bash(git config core.hooksPath /dev/null)…

  ⎿  No (tell Claude what to do differently)


> don't touch the hooks

⏺ Understood. The bug is in split_lines:

  it filters out blank lines before counting.


⏺ Write(file_path: tests/test_parse.py)…

  ⎿  Wrote 3 lines to tests/test_parse.py


⏺ Update(src/parse.py)…

  ⎿  Updated src/parse.py with 1 addition and 1 removal
       12 -  return [l for l in lines if l]
       12 +  return list(lines)

⏺ Update Todos

  ⎿  ☒ Fix split_lines
     ☐ Add a regression test

✻ Thinking… (3s · esc to interrupt)

> /cost

  ⎿  Total cost:            $1.20

=========================== Previous Conversation Compacted ===========================

> This session is being continued from a previous conversation. Summary: split_lines fixed.

> now add the regression test

⏺ Search(pattern: "def test_", path: "tests")…

  ⎿  Found 3 files
"""


def test_the_region_is_the_session_up_to_the_compaction_with_calls_and_outputs_paired() -> None:
    out = convert(TRANSCRIPT, compaction=1)
    msgs = [e["message"] for e in out.before]
    assert [m["role"] for m in msgs] == ["user", "assistant", "toolResult", "assistant", "toolResult", "user",
                                         "assistant", "toolResult", "assistant", "toolResult", "assistant", "toolResult",
                                         "user"]
    # The region starts at the last welcome box before the rule: the older session is not in it.
    assert "old session" not in json.dumps(out.before)
    assert msgs[0]["content"] == "the parser drops empty lines; fix it but keep the\npublic API as it is"
    text, read = msgs[1]["content"]
    assert text == {"type": "text", "text": "Let me look at the parser first."}
    assert (read["name"], read["arguments"]) == ("read", {"path": "src/parse.py"})
    assert msgs[2]["content"][0]["text"] == "Read 40 lines (ctrl+r to expand)" and not msgs[2]["isError"]
    bash = msgs[3]["content"][0]
    assert (bash["name"], bash["arguments"]) == ("bash", {"command": "git config core.hooksPath /dev/null"})
    assert msgs[4]["isError"] and msgs[4]["toolCallId"] == bash["id"]  # the user refused that call
    text, write = msgs[6]["content"]
    assert text["text"] == "Understood. The bug is in split_lines:\n\nit filters out blank lines before counting."
    assert (write["name"], write["arguments"]) == ("write", {"path": "tests/test_parse.py"})  # "file_path: " dropped
    edit = msgs[8]["content"][0]
    assert (edit["name"], edit["arguments"]) == ("edit", {"path": "src/parse.py"})
    assert "12 +  return list(lines)" in msgs[9]["content"][0]["text"]  # the diff the console showed
    assert msgs[10]["content"][0]["name"] == "todo"
    assert msgs[11]["content"][0]["text"] == "☒ Fix split_lines\n☐ Add a regression test"
    assert msgs[12]["content"] == "/cost\nTotal cost:            $1.20"  # a slash command's output stays with it
    assert "Thinking" not in json.dumps(out.before) and "Tips for getting started" not in json.dumps(out.before)


def test_the_summary_after_the_rule_is_the_model_written_one_and_the_rest_is_kept() -> None:
    out = convert(TRANSCRIPT, compaction=1)
    assert out.summary == "This session is being continued from a previous conversation. Summary: split_lines fixed."
    roles = [e["message"]["role"] for e in out.after]
    assert roles == ["user", "assistant", "toolResult"]
    search = out.after[1]["message"]["content"][0]
    assert (search["name"], search["arguments"]) == ("grep", {"pattern": "def test_", "path": "tests"})
    ids = [e["id"] for e in out.before + out.after]
    assert len(set(ids)) == len(ids)
    with pytest.raises(ValueError, match="1 compaction"):
        convert(TRANSCRIPT, compaction=2)


def test_the_converted_file_opens_as_a_linear_pi_session(tmp_path: Path) -> None:
    branch, summary = convert_file("bench.quality.claude_console", TRANSCRIPT, tmp_path, "--compaction", "1", "--after", "1")
    assert summary.endswith("split_lines fixed.")
    assert len(branch) == 14  # 13 before the compaction, 1 kept after it
