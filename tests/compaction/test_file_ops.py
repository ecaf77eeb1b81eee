"""§11 file-operation tracking: O-1..O-5 and edge case 22."""

from __future__ import annotations

from compactd.compaction.file_ops import (
    FileOperations,
    compute_file_lists,
    extract_file_ops,
    extract_file_ops_from_message,
    format_file_operations,
    seed_from_details,
)

from .builders import assistant_msg, tool_call, user_msg


def test_only_read_write_edit_with_non_empty_string_path() -> None:  # O-2
    msg = assistant_msg(None, calls=[
        tool_call("1", "read", {"path": "r.py"}),
        tool_call("2", "write", {"path": "w.py"}),
        tool_call("3", "edit", {"path": "e.py"}),
        tool_call("4", "bash", {"path": "b.py", "command": "cat b.py"}),
        tool_call("5", "grep", {"path": "g.py"}),
        tool_call("6", "read", {"path": ""}),
        tool_call("7", "read", {"path": 7}),
        tool_call("8", "read", {"file": "f.py"}),
    ])
    ops = FileOperations()
    extract_file_ops_from_message(msg, ops)
    assert (list(ops.read), list(ops.written), list(ops.edited)) == (["r.py"], ["w.py"], ["e.py"])


def test_non_assistant_messages_are_ignored() -> None:  # O-2
    ops = extract_file_ops([user_msg("read a.py"), {"role": "toolResult", "content": [
        {"type": "toolCall", "name": "read", "arguments": {"path": "x"}}]}])
    assert ops == FileOperations()


def test_lists_are_sorted_and_read_and_modified_are_disjoint() -> None:  # O-3, edge 22
    ops = extract_file_ops([assistant_msg(None, calls=[
        tool_call("1", "read", {"path": "z.py"}),
        tool_call("2", "read", {"path": "both.py"}),
        tool_call("3", "edit", {"path": "both.py"}),
        tool_call("4", "write", {"path": "a.py"}),
        tool_call("5", "read", {"path": "B.py"}),
    ])])
    assert compute_file_lists(ops) == (["B.py", "z.py"], ["a.py", "both.py"])


def test_sort_is_javascript_code_unit_order() -> None:  # E-5
    ops = FileOperations(read={"～.md": None, "😀.md": None})
    assert compute_file_lists(ops)[0] == ["😀.md", "～.md"]


def test_format_file_operations() -> None:  # O-4, edge 22
    assert format_file_operations([], []) == ""
    assert format_file_operations(["a", "b"], []) == "\n\n<read-files>\na\nb\n</read-files>"
    assert format_file_operations([], ["m"]) == "\n\n<modified-files>\nm\n</modified-files>"
    assert format_file_operations(["a"], ["m"]) == (
        "\n\n<read-files>\na\n</read-files>\n\n<modified-files>\nm\n</modified-files>")


def test_seed_from_details_rules() -> None:  # O-5
    ops = FileOperations()
    seed_from_details({"details": {"readFiles": ["r"], "modifiedFiles": ["m"]}}, ops)
    assert (list(ops.read), list(ops.edited)) == (["r"], ["m"])
    for extension_made in ({"fromHook": True}, {"fromExtension": True}):
        other = FileOperations()
        seed_from_details({"details": {"readFiles": ["r"]}, **extension_made}, other)
        assert other == FileOperations()
    odd = FileOperations()
    seed_from_details({"details": {"readFiles": "r.py", "modifiedFiles": None}}, odd)
    seed_from_details({"details": ["r.py"]}, odd)
    assert odd == FileOperations()
