"""§9 serializeConversation: Z-1..Z-6, edge cases 23–24, truncation in UTF-16 units (D-12)."""

from __future__ import annotations

from compactd.compaction.jscompat import REPLACEMENT_CHAR, utf16_len
from compactd.compaction.serialize import (
    TOOL_RESULT_MAX_CHARS,
    serialize_conversation,
    serialize_messages,
    truncate_for_summary,
)

from .builders import assistant_msg, bash_msg, image_block, text_block, tool_call, tool_result_msg, user_msg


def test_spec_example() -> None:  # Z-1, §9 example
    text = serialize_conversation([
        user_msg("fix the bug"),
        assistant_msg("Looking.", calls=[tool_call("1", "read", {"path": "src/a.ts"})]),
    ])
    assert text == '[User]: fix the bug\n\n[Assistant]: Looking.\n\n[Assistant tool calls]: read(path="src/a.ts")'


def test_user_text_blocks_concatenate_without_separator_and_skip_images() -> None:  # Z-2
    msg = user_msg([text_block("a"), image_block(), text_block("b")])
    assert serialize_conversation([msg]) == "[User]: ab"
    assert serialize_conversation([{"role": "user", "content": "plain"}]) == "[User]: plain"
    assert serialize_conversation([user_msg([image_block()]), user_msg("")]) == ""  # empty → no part


def test_assistant_parts_in_fixed_order() -> None:  # Z-3, edge 24
    msg = {
        "role": "assistant",
        "content": [
            tool_call("1", "edit", {"path": "a.py", "old": "x", "n": 2}),
            text_block("first"),
            {"type": "thinking", "thinking": "t1"},
            tool_call("2", "bash", {"command": "ls -la", "opts": {"cwd": "/"}, "list": [1, 2.0]}),
            text_block("second"),
            {"type": "thinking", "thinking": "t2"},
        ],
    }
    assert serialize_conversation([msg]) == (
        "[Assistant thinking]: t1\nt2\n\n"
        "[Assistant]: first\nsecond\n\n"
        '[Assistant tool calls]: edit(path="a.py", old="x", n=2); '
        'bash(command="ls -la", opts={"cwd":"/"}, list=[1,2])'
    )


def test_empty_text_block_still_makes_an_assistant_part() -> None:  # Z-3
    assert serialize_conversation([assistant_msg("")]) == "[Assistant]: "
    assert serialize_conversation([assistant_msg(None)]) == ""


def test_tool_call_arguments_use_javascript_key_order() -> None:  # E-4
    msg = assistant_msg(None, calls=[tool_call("1", "t", {"b": 1, "2": "two", "a": None, "1": True})])
    assert serialize_conversation([msg]) == '[Assistant tool calls]: t(1=true, 2="two", b=1, a=null)'


def test_tool_result_truncation_boundaries() -> None:  # Z-4, edge 23
    long = "x" * 5000
    assert serialize_conversation([tool_result_msg("c", "read", long)]) == (
        "[Tool result]: " + "x" * 2000 + "\n\n[... 3000 more characters truncated]")
    assert serialize_conversation([tool_result_msg("c", "read", "y" * 1500)]) == "[Tool result]: " + "y" * 1500
    exactly = "z" * TOOL_RESULT_MAX_CHARS
    assert serialize_conversation([tool_result_msg("c", "read", exactly)]) == "[Tool result]: " + exactly
    # user and assistant text are never truncated
    assert serialize_conversation([user_msg(long)]) == "[User]: " + long
    assert serialize_conversation([assistant_msg(long)]) == "[Assistant]: " + long


def test_tool_result_blocks_concatenate_and_errors_are_not_marked() -> None:  # Z-4
    msg = tool_result_msg("c", "bash", [text_block("out"), image_block(), text_block("put")])
    msg["isError"] = True
    assert serialize_conversation([msg]) == "[Tool result]: output"
    assert serialize_conversation([tool_result_msg("c", "bash", [image_block()])]) == ""


def test_truncation_counts_utf16_units() -> None:  # D-12, A-11
    text = "😀" * 1500  # 3000 units
    out = truncate_for_summary(text)
    assert out == "😀" * 1000 + "\n\n[... 1000 more characters truncated]"
    # a cut through a surrogate pair: same length in units, half pair shown as U+FFFD
    odd = "a" + "😀" * 1500  # 3001 units; unit 2000 is the high half of a pair
    cut = truncate_for_summary(odd)
    head, _, tail = cut.partition("\n\n[... ")
    assert utf16_len(head) == 2000
    assert head.endswith(REPLACEMENT_CHAR)
    assert tail == "1001 more characters truncated]"


def test_developer_and_other_roles() -> None:  # Z-5, Z-6
    assert serialize_conversation([{"role": "developer", "content": "be terse"}]) == "[Developer]: be terse"
    assert serialize_conversation([{"role": "developer", "content": ""}]) == ""
    assert serialize_conversation([{"role": "bashExecution", "command": "ls", "output": "x"}]) == ""


def test_serialize_messages_converts_agent_roles_first() -> None:  # S-3
    out = serialize_messages([
        bash_msg("ls", "a.txt"),
        bash_msg("secret", "x", excludeFromContext=True),
        {"role": "custom", "customType": "ext", "content": "from an extension", "display": True, "timestamp": 1},
    ])
    assert out == "[User]: Ran `ls`\n```\na.txt\n```\n\n[User]: from an extension"
