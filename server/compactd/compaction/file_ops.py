"""File-operation tracking (spec §11, O-1..O-5): which files the summarized history read or
changed, carried forward from summary to summary and appended to summaries as tags."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .jscompat import js_sorted

__all__ = [
    "FileOperations",
    "extract_file_ops_from_message",
    "extract_file_ops",
    "seed_from_details",
    "compute_file_lists",
    "format_file_operations",
    "is_extension_made",
]


@dataclass
class FileOperations:
    """O-1: three insertion-ordered sets (dicts with None values keep insertion order)."""

    read: dict[str, None] = field(default_factory=dict)
    written: dict[str, None] = field(default_factory=dict)
    edited: dict[str, None] = field(default_factory=dict)

    # Written out, so mypyc compiles it (see SessionContext.__init__). Same parameters.
    def __init__(self, read: dict[str, None] | None = None, written: dict[str, None] | None = None,
                 edited: dict[str, None] | None = None) -> None:
        self.read = {} if read is None else read
        self.written = {} if written is None else written
        self.edited = {} if edited is None else edited

    def copy(self) -> FileOperations:
        return FileOperations(dict(self.read), dict(self.written), dict(self.edited))


def extract_file_ops_from_message(message: Mapping[str, Any], ops: FileOperations) -> None:
    """O-2: `read`/`write`/`edit` tool calls of an assistant message with a non-empty string
    `path` argument. Every other tool (bash, grep, …) is ignored, as in Pi."""
    if message.get("role") != "assistant":
        return
    content = message.get("content")
    if not isinstance(content, list):
        return
    for block in content:
        if not isinstance(block, dict) or block.get("type") != "toolCall":
            continue
        name = block.get("name")
        if name == "read":
            target = ops.read
        elif name == "edit":
            target = ops.edited
        elif name == "write":
            target = ops.written
        else:
            continue
        arguments = block.get("arguments")
        path = arguments.get("path") if isinstance(arguments, dict) else None
        if isinstance(path, str) and path:
            target[path] = None


def extract_file_ops(messages: Iterable[Mapping[str, Any]], ops: FileOperations | None = None) -> FileOperations:
    ops = ops if ops is not None else FileOperations()
    for message in messages:
        extract_file_ops_from_message(message, ops)
    return ops


def is_extension_made(entry: Mapping[str, Any]) -> bool:
    """F-9/O-5: summaries supplied by an extension/hook (Pi `fromHook`, oh-my-pi `fromExtension`)."""
    return bool(entry.get("fromHook")) or bool(entry.get("fromExtension"))


def seed_from_details(entry: Mapping[str, Any], ops: FileOperations) -> None:
    """O-5: add a pi-generated summary entry's `details` lists (`readFiles` → read,
    `modifiedFiles` → edited). Extension-made entries are never harvested; lists are used only
    if they are arrays. Non-string items are skipped (Pi only ever writes strings there)."""
    if is_extension_made(entry):
        return
    details = entry.get("details")
    if not isinstance(details, dict):
        return
    read_files = details.get("readFiles")
    if isinstance(read_files, list):
        for path in read_files:
            if isinstance(path, str):
                ops.read[path] = None
    modified_files = details.get("modifiedFiles")
    if isinstance(modified_files, list):
        for path in modified_files:
            if isinstance(path, str):
                ops.edited[path] = None


def compute_file_lists(ops: FileOperations) -> tuple[list[str], list[str]]:
    """O-3: (readFiles, modifiedFiles). A file both read and changed appears only as modified.
    Both lists use JavaScript's default sort (UTF-16 code-unit order, E-5)."""
    modified = dict(ops.edited)
    modified.update(ops.written)
    read_only = [path for path in ops.read if path not in modified]
    return js_sorted(read_only), js_sorted(modified)


def format_file_operations(read_files: list[str], modified_files: list[str]) -> str:
    """O-4: the tag block appended to a summary; "" when both lists are empty."""
    sections: list[str] = []
    if read_files:
        sections.append("<read-files>\n" + "\n".join(read_files) + "\n</read-files>")
    if modified_files:
        sections.append("<modified-files>\n" + "\n".join(modified_files) + "\n</modified-files>")
    if not sections:
        return ""
    return "\n\n" + "\n\n".join(sections)
