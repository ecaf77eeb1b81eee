"""Pure tree algorithms over session entries (spec §3): paths, children, labels, the tree view,
and Pi's session-folder layout (F-15, F-16, F-19). No state; `store.Session` wires these up."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping

Entry = dict[str, Any]


def path_to(by_id: Mapping[str, Entry], leaf_id: str | None) -> list[Entry]:
    """Entries from the root down to `leaf_id` (T-3, X-3). Unknown leaf → [].

    The walk stops at a null or missing parent, and also at a repeated id so a corrupt file
    with a parentId cycle cannot hang us.
    """
    path: list[Entry] = []
    seen: set[str] = set()
    current = by_id.get(leaf_id) if leaf_id is not None else None
    while current is not None:
        entry_id = current["id"]
        if entry_id in seen:
            break
        seen.add(entry_id)
        path.append(current)
        parent = current.get("parentId")
        current = by_id.get(parent) if parent is not None else None
    path.reverse()
    return path


def children_index(entries: Iterable[Entry]) -> dict[str | None, list[Entry]]:
    """parentId → children in file order (T-2 `getChildren`)."""
    index: dict[str | None, list[Entry]] = {}
    for entry in entries:
        index.setdefault(entry.get("parentId"), []).append(entry)
    return index


def resolve_labels(entries: Iterable[Entry]) -> dict[str, str]:
    """Current label per target (T-9): label entries in file order, last wins, empty clears."""
    labels: dict[str, str] = {}
    for entry in entries:
        if entry.get("type") != "label":
            continue
        target = entry.get("targetId")
        if not isinstance(target, str):
            continue
        label = entry.get("label")
        if isinstance(label, str) and label:
            labels[target] = label
        else:
            labels.pop(target, None)
    return labels


def latest_session_name(entries: Iterable[Entry]) -> str | None:
    """T-10 [PI-NEW]: the latest `session_info` entry decides; an empty name means cleared."""
    name: str | None = None
    for entry in entries:
        if entry.get("type") == "session_info":
            value = entry.get("name")
            name = value.strip() if isinstance(value, str) and value.strip() else None
    return name


def clean_session_name(name: str) -> str:
    """T-10: trim, and fold CR/LF runs into one space."""
    return re.sub(r"[\r\n]+", " ", name).strip()


@dataclass
class TreeNode:
    entry: Entry
    children: list["TreeNode"] = field(default_factory=list)
    label: str | None = None


def build_tree(entries: list[Entry], labels: Mapping[str, str] | None = None) -> list[TreeNode]:
    """getTree (T-4): roots are entries whose parent is null, themselves, or missing; children are
    ordered by timestamp (stable). Entries caught in a parentId cycle would be unreachable, so
    they are surfaced as extra roots instead of vanishing. Iterative: no recursion limit."""
    labels = labels if labels is not None else resolve_labels(entries)
    nodes: dict[str, TreeNode] = {}
    for entry in entries:
        nodes[entry["id"]] = TreeNode(entry=entry, label=labels.get(entry["id"]))
    roots: list[TreeNode] = []
    for entry in entries:
        node = nodes[entry["id"]]
        parent_id = entry.get("parentId")
        parent = nodes.get(parent_id) if parent_id is not None and parent_id != entry["id"] else None
        if parent is None:
            roots.append(node)
        else:
            parent.children.append(node)
    reached = _reachable(roots)
    if len(reached) != len(nodes):
        for entry in entries:
            if entry["id"] not in reached:
                node = nodes[entry["id"]]
                # Cut the cycle here: detached from its parent, the node is a real root and every
                # walk over the tree ends.
                parent = nodes.get(entry.get("parentId"))  # type: ignore[arg-type]
                if parent is not None:
                    parent.children = [c for c in parent.children if c is not node]
                roots.append(node)
                reached |= _reachable([node])
    for node in nodes.values():
        if len(node.children) > 1:
            node.children.sort(key=lambda child: str(child.entry.get("timestamp", "")))
    return roots


def _reachable(roots: list[TreeNode]) -> set[str]:
    seen: set[str] = set()
    stack = list(roots)
    while stack:
        node = stack.pop()
        if node.entry["id"] in seen:
            continue
        seen.add(node.entry["id"])
        stack.extend(node.children)
    return seen


# --- session folders (F-15, F-16, F-19) ------------------------------------------------------


def default_agent_dir(env: Mapping[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    override = env.get("PI_CODING_AGENT_DIR")
    if override:
        return Path(os.path.expanduser(override))
    return Path(os.path.expanduser("~")) / ".pi" / "agent"


def encode_cwd(cwd: str) -> str:
    """F-15: drop one leading slash/backslash, replace every `/`, `\\` and `:` by `-`, wrap in `--`."""
    trimmed = cwd[1:] if cwd[:1] in ("/", "\\") else cwd
    return "--" + re.sub(r"[/\\:]", "-", trimmed) + "--"


def session_dir_for_cwd(cwd: str, agent_dir: Path | None = None) -> Path:
    return (agent_dir or default_agent_dir()) / "sessions" / encode_cwd(cwd)


def session_file_name(iso_timestamp: str, session_id: str) -> str:
    """F-16: `<ISO timestamp with ':' and '.' replaced by '-'>_<sessionId>.jsonl`."""
    return re.sub(r"[:.]", "-", iso_timestamp) + f"_{session_id}.jsonl"


def read_header(path: Path) -> dict[str, Any] | None:
    """The header of a session file if its first line is a valid one (after oh-my-pi's title slot
    line, QO-1, when there is one), else None."""
    import json

    try:
        with open(path, "rb") as handle:
            obj = json.loads(handle.readline(1 << 20))
            if isinstance(obj, dict) and obj.get("type") == "title" and obj.get("v") == 1:
                obj = json.loads(handle.readline(1 << 20))
    except (OSError, ValueError):
        return None
    if isinstance(obj, dict) and obj.get("type") == "session" and isinstance(obj.get("id"), str):
        return obj
    return None


@dataclass
class SessionFileInfo:
    path: Path
    session_id: str
    cwd: str | None
    mtime: float
    size: int


def list_session_files(directory: Path, cwd: str | None = None) -> list[SessionFileInfo]:
    """Valid session files in `directory`, newest mtime first (F-19). Non-`.jsonl` files and files
    without a valid header are ignored; with `cwd`, only headers whose cwd resolves to it."""
    found: list[SessionFileInfo] = []
    if not directory.is_dir():
        return found
    wanted = os.path.realpath(cwd) if cwd is not None else None
    for path in directory.iterdir():
        if path.suffix != ".jsonl" or not path.is_file():
            continue
        header = read_header(path)
        if header is None:
            continue
        header_cwd = header.get("cwd") if isinstance(header.get("cwd"), str) else None
        if wanted is not None and (header_cwd is None or os.path.realpath(header_cwd) != wanted):
            continue
        stat = path.stat()
        found.append(SessionFileInfo(path, header["id"], header_cwd, stat.st_mtime, stat.st_size))
    found.sort(key=lambda info: info.mtime, reverse=True)
    return found


def find_most_recent_session(directory: Path, cwd: str | None = None) -> Path | None:
    files = list_session_files(directory, cwd)
    return files[0].path if files else None
