"""The lazy side-panel tree (issue 14): pages of the lists a panel shows, from a cached `TreeIndex`.

`session/tree` with `limit` answers with pages instead of every node: the leaf's screen (a page
of the leaf's own list around the leaf, and each list above it with its row on the path and as
many rows before it as `limit` rows in all allow) or one more page of one list before or
after a row. Rows carry the node fields of the full tree, figures included (computed
for the rows returned only), and branch points carry their branches (first entry, entry count).
`session/didChange` carries the appended entries as nodes (`delta_nodes`).

One `TreePanel` per open session; its index is built once (off the event loop, when the session
is opened), extended by appends and rebuilt after a reload (the session's generation changes).
The display fields of each row shown once are kept (`TreePanel._display`): a screen of a deeply
branched session is over a thousand nodes, and their previews cost more than the rest of the answer.
A compaction's figures walk back only to its first kept entry (`compaction/figures.py`), so a `didChange`
for an appended compaction costs the kept entries on the event loop, not the depth of the path.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from compactd.compaction.figures import compaction_figures, summarized_entries
from compactd.session.tree_index import TreeIndex
from compactd.session.views import context_edit_preview, entry_kind, entry_preview, entry_role

Entry = dict[str, Any]


class CursorError(ValueError):
    """A page cursor or branch that does not fit the tree (InvalidParams, naming the field)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field


def node_fields(entry: Entry, by_id: Mapping[str, Entry], label: str | None, children: list[str],
                is_leaf: bool, on_path: bool, *, figures: bool = True) -> dict[str, Any]:
    """One node as the full `session/tree` lists it (figures included)."""
    node: dict[str, Any] = {
        "id": entry["id"],
        "parentId": entry.get("parentId"),
        "type": entry.get("type"),
        "role": entry_role(entry),
        "children": children,
        "label": label,
        "kind": entry_kind(entry),
        "preview": entry_preview(entry),
        "timestamp": entry.get("timestamp"),
        "isLeaf": is_leaf,
        "onLeafPath": on_path,
    }
    kind = entry.get("type")
    if not figures:
        return node
    if kind == "compaction":
        node.update(compaction_figures(by_id, entry))
    elif kind == "branch_summary":
        node["summarizedEntries"] = summarized_entries(by_id, entry)
    return node


# The leaf's screen computed when the index is built, so the panel's first request finds its rows'
# display fields ready: the page size of the VS Code panel (client-vscode TREE_PAGE).
PRIME_LIMIT = 200

Display = tuple[Any, Any, Any, str | None, str, str, Any]  # id, parentId, type, role, kind, preview, timestamp


class TreePanel:
    """The per-session index behind paged `session/tree` answers. Used from worker threads;
    the lock serializes them (each holds it for one page or one catch-up)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._index: TreeIndex | None = None
        # Per index: summary figures and display fields of the rows shown so far, by entry id.
        self._figures: dict[str, dict[str, Any]] = {}
        self._display: dict[str, Display] = {}
        self._memo_of: TreeIndex | None = None

    def forget(self) -> None:
        """Drop the index (after a reload it holds the old entries alive). No lock: one atomic
        assignment, and a page being answered meanwhile is checked by generation next time."""
        self._index = None

    def forget_figures(self) -> None:
        """Entries were pruned: the token figures of compactions and the previews of tool
        results may have changed."""
        self._memo_of = None

    def stale(self, by_id: Mapping[str, Entry], generation: int) -> bool:
        """True when the next page would build the index from scratch (see `warm`)."""
        index = self._index
        return index is None or index.generation != generation or index.by_id is not by_id

    def index(self, entries: list[Entry], by_id: Mapping[str, Entry], generation: int) -> TreeIndex:
        """The index, caught up with `entries` (call with the lock held)."""
        index = self._index
        if index is None or index.generation != generation or index.by_id is not by_id or not index.extend(entries):
            index = TreeIndex(entries, by_id, generation)
            self._index = index
        return index

    def warm(self, entries: list[Entry], by_id: Mapping[str, Entry], generation: int, leaf: str | None) -> None:
        """Build the index and compute the leaf's screen once (its figures and display fields are
        kept), so the panel's first screen costs a page."""
        with self._lock:
            self._pages(self.index(entries, by_id, generation), leaf).answer(
                PRIME_LIMIT, True, None, None, None, len(entries))

    def page(self, entries: list[Entry], by_id: Mapping[str, Entry], generation: int, leaf: str | None,
             limit: int, branch: str | None = None, after: str | None = None,
             before: str | None = None, *, top: bool = False) -> dict[str, Any]:
        """The leaf's screen, or (`branch`, or `top` for the top level) one page of a list: from
        its start, or after / before a row of it."""
        with self._lock:
            index = self.index(entries, by_id, generation)
            screen = branch is None and after is None and before is None and not top
            return self._pages(index, leaf).answer(limit, screen, branch, after, before, len(entries))

    def _pages(self, index: TreeIndex, leaf: str | None) -> _Pages:
        if self._memo_of is not index:
            self._figures, self._display, self._memo_of = {}, {}, index
        return _Pages(index, leaf, self._figures, self._display)


class _Pages:
    def __init__(self, index: TreeIndex, leaf: str | None, figures: dict[str, dict[str, Any]],
                 display: dict[str, Display]) -> None:
        self.index = index
        self.figures = figures
        self.display = display
        self.leaf = leaf if leaf is not None and leaf in index.head else None
        self.marks = index.path_marks(self.leaf)

    def answer(self, limit: int, screen: bool, branch: str | None, after: str | None, before: str | None,
               entry_count: int) -> dict[str, Any]:
        index = self.index
        path = index.leaf_path(self.leaf)
        lists: list[dict[str, Any]] = []
        if screen:
            if path:
                # A page around the leaf in its own list; the lists above share what it leaves of
                # `limit` rows, deepest first, each at least its row on the path (a session
                # navigated often nests hundreds of branches deep).
                budget = limit
                pages: list[dict[str, Any]] = []
                for depth, (key, through) in enumerate(reversed(path)):
                    before = index.rows_before(through, limit - 1 if depth == 0 else min(limit - 1, max(0, budget - 1)))
                    budget -= len(before) + 1
                    after = index.rows_after(through, limit if depth == 0 else min(limit, max(0, budget)))
                    budget -= len(after)
                    pages.append(self.page(key, [*before, through, *after]))
                lists.extend(reversed(pages))
            else:
                first = index.first_in(None)
                rows = [first, *index.rows_after(first, limit - 1)] if first is not None else []
                lists.append(self.page(None, rows))
        else:
            if branch is not None:
                if branch not in index.head:
                    raise CursorError("branch", f"Entry {branch} not found")
                if index.list_key(branch) != branch:
                    raise CursorError("branch", f"entry {branch} does not start a branch (it is not the child of a branch point)")
            cursor, field = (after, "after") if after is not None else (before, "before")
            if cursor is None:
                first = index.first_in(branch)
                rows = [first, *index.rows_after(first, limit - 1)] if first is not None else []
            else:
                if cursor not in index.head:
                    raise CursorError(field, f"Entry {cursor} not found")
                if index.list_key(cursor) != branch:
                    where = "the top level" if branch is None else f"branch {branch}"
                    raise CursorError(field, f"entry {cursor} is not listed in {where}")
                rows = index.rows_after(cursor, limit) if after is not None else index.rows_before(cursor, limit)
            lists.append(self.page(branch, rows))
        return {
            "leafId": self.leaf,
            "entryCount": entry_count,
            "leafPath": [{"branch": key, "throughId": through} for key, through in path],
            "lists": lists,
        }

    def page(self, key: str | None, rows: list[str]) -> dict[str, Any]:
        index = self.index
        return {
            "branch": key,
            "rows": [self.row(eid) for eid in rows],
            "hasMoreBefore": bool(rows) and index.prev_in_list(rows[0]) is not None,
            "hasMoreAfter": bool(rows) and index.next_in_list(rows[-1]) is not None,
            # How many rows of the list are not on this page, before and after it: what a panel's
            # "Earlier entries…" row stands for.
            "moreBefore": index.count_before(rows[0]) if rows else 0,
            "moreAfter": index.count_after(rows[-1]) if rows else 0,
        }

    def node(self, eid: str) -> dict[str, Any]:
        """`node_fields` of one row, from the memos: an entry's display fields and summary figures
        depend only on the entry and its ancestors (pruning, which changes them, drops the memos)."""
        index = self.index
        shown = self.display.get(eid)
        if shown is None:
            entry = index.by_id[eid]
            shown = (eid, entry.get("parentId"), entry.get("type"), entry_role(entry), entry_kind(entry),
                     entry_preview(entry), entry.get("timestamp"))
            self.display[eid] = shown
        figures = self.figures.get(eid)
        kind = shown[2]
        if figures is None and kind in ("compaction", "branch_summary"):
            entry = index.by_id[eid]
            if kind == "branch_summary":
                start = entry.get("fromId")
                # None: the branch it summarizes is not in this file (a fork keeps only the path).
                count = index.below_meeting(start, eid) if isinstance(start, str) and start in index.head else None
                figures = {"summarizedEntries": count}
            else:
                figures = compaction_figures(index.by_id, entry)
            self.figures[eid] = figures
        preview = shown[5]
        if kind == "context_edit":
            preview = self.edit_preview(eid)
        node: dict[str, Any] = {
            "id": shown[0],
            "parentId": shown[1],
            "type": kind,
            "role": shown[3],
            "children": list(index.kids.get(eid, ())),
            "label": index.labels.get(eid),
            "kind": shown[4],
            "preview": preview,
            "timestamp": shown[6],
            "isLeaf": eid == self.leaf,
            "onLeafPath": index.on_path(eid, self.marks),
        }
        edit = index.edits.get(eid)
        if edit is not None:
            node["contextEdit"] = edit
        if figures is not None:
            node.update(figures)
        return node

    def edit_preview(self, eid: str) -> str:
        entry = self.index.by_id[eid]
        target_id = entry.get("targetId")
        return context_edit_preview(entry, self.index.by_id.get(target_id) if isinstance(target_id, str) else None)

    def row(self, eid: str) -> dict[str, Any]:
        node = self.node(eid)
        children = node["children"]
        if len(children) > 1:
            node["branches"] = [{"first": self.node(c), "entryCount": self.index.size[c]} for c in children]
        return node


def delta_nodes(new: list[Entry], by_id: Mapping[str, Entry], labels: Mapping[str, str],
                leaf: str | None) -> list[dict[str, Any]]:
    """The appended entries as nodes, for `session/didChange`: cheap enough for the event loop
    (O(entries appended), figures of summary entries included). Children are among the new
    entries themselves; on-path marks follow the leaf back through them."""
    ids = {e["id"] for e in new}
    children: dict[str, list[str]] = {}
    for entry in new:
        parent = entry.get("parentId")
        if parent in ids and parent != entry["id"]:
            children.setdefault(parent, []).append(entry["id"])
    on_path: set[str] = set()
    current = leaf
    while current in ids and current not in on_path:
        on_path.add(current)
        current = by_id[current].get("parentId")
    out = []
    for entry in new:
        kids = children.get(entry["id"], [])
        if len(kids) > 1:
            kids.sort(key=lambda cid: str(by_id[cid].get("timestamp", "")))
        out.append(node_fields(entry, by_id, labels.get(entry["id"]), kids, entry["id"] == leaf, entry["id"] in on_path))
    return out
