"""The session tree as a side panel lists it, indexed for paging (issue 14: a lazy `session/tree`).

The panel flattens runs: an entry with exactly one child is followed by that child in the same
list; an entry with two or more children (a branch point) ends its list, and each child starts
the list of one branch. The top-level list is the run of every root, one after the other. A
linear session of 100k entries is one list of 100k rows, so pages are cut along lists, with entry
ids as cursors.

`TreeIndex` stores, per entry, the first entry of its run (`head`) and its position there, so a
page, the leaf's path through the lists and "is this row on the leaf path" cost O(rows returned +
branch nesting), never O(session). Built once in O(n) with `build_tree`'s rules (roots: parent
null, itself or missing; children by timestamp; parentId cycles cut into extra roots); appends
extend it in O(1) except when they turn a mid-run entry into a branch point (O(rest of that run)).
Not thread-safe: the daemon serializes access.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Mapping
from typing import Any

from .gc_pause import gc_paused

Entry = dict[str, Any]


def _ts(entry: Entry) -> str:
    return str(entry.get("timestamp", ""))


class TreeIndex:
    def __init__(self, entries: list[Entry], by_id: Mapping[str, Entry], generation: int = 0) -> None:
        self.generation = generation
        self.by_id = by_id
        self.parent: dict[str, str | None] = {}  # parent in the panel (None: a root)
        self.kids: dict[str, list[str]] = {}  # children in panel order (timestamp, then file order)
        self.roots: list[str] = []
        self.root_index: dict[str, int] = {}
        self.head: dict[str, str] = {}  # first entry of the run an entry is listed in
        self.pos: dict[str, int] = {}  # position in that run
        self.run_end: dict[str, str] = {}  # per head: last entry of the run
        self.size: dict[str, int] = {}  # per head: entries in the run and every branch below it
        self.labels: dict[str, str] = {}
        # Pi 1.6 context edits by target: "omitted" or "replaced" (the latest edit wins, Q16-28).
        self.edits: dict[str, str] = {}
        self._wanted: set[str] = set()  # missing parents of roots: their arrival means a rebuild
        self.seen = 0
        self._build(entries)

    # --- building ------------------------------------------------------------------------------

    def _build(self, entries: list[Entry]) -> None:
        with gc_paused():  # ~100k small lists, none of them cyclic
            self._build_all(entries)

    def _build_all(self, entries: list[Entry]) -> None:
        by_id, parent_of, kids = self.by_id, self.parent, self.kids
        for entry in entries:
            eid = entry["id"]
            parent = entry.get("parentId")
            if parent is not None and parent != eid and parent in by_id:
                parent_of[eid] = parent
                siblings = kids.get(parent)
                if siblings is None:
                    kids[parent] = [eid]
                else:
                    siblings.append(eid)
            else:
                parent_of[eid] = None
                self.roots.append(eid)
                if parent is not None and parent != eid:
                    self._wanted.add(parent)
            if entry.get("type") in ("label", "context_edit"):
                self._label(entry)
        for children in self.kids.values():
            if len(children) > 1:
                children.sort(key=lambda cid: _ts(by_id[cid]))
        order: list[str] = []
        for root in self.roots:
            self._walk(root, order)
        if len(self.head) != len(self.parent):
            # Entries on a parentId cycle are unreachable: cut each cycle at its first entry in
            # file order, which becomes a root (as build_tree does).
            for entry in entries:
                eid = entry["id"]
                if eid in self.head:
                    continue
                parent = self.parent[eid]
                if parent is not None:
                    self.kids[parent].remove(eid)
                self.parent[eid] = None
                self.roots.append(eid)
                self._walk(eid, order)
        for index, root in enumerate(self.roots):
            self.root_index[root] = index
        for head in reversed(order):  # children's runs before their parents'
            total = self.pos[self.run_end[head]] + 1
            below = self.kids.get(self.run_end[head])
            if below:
                total += sum(self.size[c] for c in below)
            self.size[head] = total
        self.seen = len(entries)

    def _walk(self, start: str, order: list[str]) -> None:
        """Assign runs below `start` (iteratively: sessions are 100k entries deep)."""
        stack = [start]
        head, pos, kids = self.head, self.pos, self.kids
        while stack:
            first = stack.pop()
            order.append(first)
            current, position = first, 0
            while True:
                head[current] = first
                pos[current] = position
                children = kids.get(current)
                if children is not None and len(children) == 1 and children[0] not in head:
                    current = children[0]
                    position += 1
                    continue
                break
            self.run_end[first] = current
            if children:
                stack.extend(c for c in reversed(children) if c not in head)

    def _label(self, entry: Entry) -> None:
        if entry.get("type") == "context_edit" and isinstance(entry.get("targetId"), str):
            self.edits[entry["targetId"]] = "omitted" if entry.get("replacement") is None else "replaced"
            return
        if entry.get("type") != "label" or not isinstance(entry.get("targetId"), str):
            return
        label = entry.get("label")
        if isinstance(label, str) and label:
            self.labels[entry["targetId"]] = label
        else:
            self.labels.pop(entry["targetId"], None)

    # --- appends -------------------------------------------------------------------------------

    def extend(self, entries: list[Entry]) -> bool:
        """Take entries appended since the last call (`entries` is the whole list); False when
        the index cannot follow (an entry is the missing parent of a root): rebuild then."""
        new = entries[self.seen:]
        for entry in new:
            if entry["id"] in self._wanted or entry["id"] in self.parent:
                return False
            self._append(entry)
            self.seen += 1
        return True

    def _append(self, entry: Entry) -> None:
        eid = entry["id"]
        parent = entry.get("parentId")
        self._label(entry)
        if parent is None or parent == eid or parent not in self.parent:
            if parent is not None and parent != eid:
                self._wanted.add(parent)
            self.parent[eid] = None
            self.root_index[eid] = len(self.roots)
            self.roots.append(eid)
            self._start_run(eid)
            return
        self.parent[eid] = parent
        children = self.kids.setdefault(parent, [])
        run = self.head[parent]
        if not children:
            children.append(eid)
            self.head[eid] = run
            self.pos[eid] = self.pos[parent] + 1
            self.run_end[run] = eid
        else:
            keys = [_ts(self.by_id[c]) for c in children]
            children.insert(bisect_right(keys, _ts(entry)), eid)
            if len(children) == 2:
                self._split(parent, next(c for c in children if c != eid))
            self._start_run(eid)
        self._grow(run)

    def _start_run(self, eid: str) -> None:
        self.head[eid] = eid
        self.pos[eid] = 0
        self.run_end[eid] = eid
        self.size[eid] = 1

    def _split(self, point: str, child: str) -> None:
        """`point` just became a branch point: the rest of its run, from `child`, is a branch."""
        run = self.head[point]
        end = self.run_end[run]
        self.run_end[run] = point
        current, position = child, 0
        while True:
            self.head[current] = child
            self.pos[current] = position
            if current == end:
                break
            current = self.kids[current][0]
            position += 1
        self.run_end[child] = end
        self.size[child] = self.size[run] - (self.pos[point] + 1)

    def _grow(self, run: str) -> None:
        """One more entry below `run`: every run above it holds one more."""
        current: str | None = run
        while current is not None:
            self.size[current] += 1
            above = self.parent[current]
            current = self.head[above] if above is not None else None

    # --- queries -------------------------------------------------------------------------------

    def list_key(self, eid: str) -> str | None:
        """The list an entry is shown in: None for the top level, else its branch's first entry."""
        run = self.head[eid]
        return None if self.parent[run] is None else run

    def first_in(self, key: str | None) -> str | None:
        if key is None:
            return self.roots[0] if self.roots else None
        return key

    def next_in_list(self, eid: str) -> str | None:
        children = self.kids.get(eid)
        if children and len(children) == 1:
            return children[0]
        run = self.head[eid]
        if self.parent[run] is None:  # the top level goes on with the next root's run
            index = self.root_index[run] + 1
            return self.roots[index] if index < len(self.roots) else None
        return None

    def prev_in_list(self, eid: str) -> str | None:
        run = self.head[eid]
        if run != eid:
            return self.parent[eid]
        if self.parent[run] is None:
            index = self.root_index[run]
            return self.run_end[self.roots[index - 1]] if index > 0 else None
        return None

    def count_before(self, eid: str) -> int:
        """Rows listed before `eid` in its list (the earlier roots' runs too, at the top level)."""
        run = self.head[eid]
        count = self.pos[eid]
        if self.parent[run] is None:
            count += sum(self.pos[self.run_end[r]] + 1 for r in self.roots[: self.root_index[run]])
        return count

    def count_after(self, eid: str) -> int:
        """Rows listed after `eid` in its list."""
        run = self.head[eid]
        count = self.pos[self.run_end[run]] - self.pos[eid]
        if self.parent[run] is None:
            count += sum(self.pos[self.run_end[r]] + 1 for r in self.roots[self.root_index[run] + 1:])
        return count

    def leaf_path(self, leaf: str | None) -> list[tuple[str | None, str]]:
        """(list, the list's row on the path) for every list from the top level down to the
        leaf's: that row is a branch point, or the leaf itself in the last list."""
        out: list[tuple[str | None, str]] = []
        current = leaf if leaf is not None and leaf in self.head else None
        while current is not None:
            run = self.head[current]
            above = self.parent[run]
            out.append((None if above is None else run, current))
            current = above
        out.reverse()
        return out

    def path_marks(self, leaf: str | None) -> dict[str, int]:
        """run → last position on the leaf path, for `on_path`."""
        marks: dict[str, int] = {}
        for _, through in self.leaf_path(leaf):
            marks[self.head[through]] = self.pos[through]
        return marks

    def on_path(self, eid: str, marks: Mapping[str, int]) -> bool:
        limit = marks.get(self.head[eid])
        return limit is not None and self.pos[eid] <= limit

    def rows_after(self, eid: str, limit: int) -> list[str]:
        out: list[str] = []
        current = self.next_in_list(eid)
        while current is not None and len(out) < limit:
            out.append(current)
            current = self.next_in_list(current)
        return out

    def rows_before(self, eid: str, limit: int) -> list[str]:
        out: list[str] = []
        current = self.prev_in_list(eid)
        while current is not None and len(out) < limit:
            out.append(current)
            current = self.prev_in_list(current)
        out.reverse()
        return out

    def below_meeting(self, start: str, other: str) -> int:
        """How many entries of `start`'s path lie below where it meets `other`'s path (both read
        upwards), counted run by run: the two chains are walked in turn, a whole run per step, so
        this costs the runs between them, not the depth. Both ids must be indexed."""
        head, pos, parent = self.head, self.pos, self.parent
        seen_a: dict[str, tuple[int, int]] = {}  # run → (position entered at, entries counted before it)
        seen_b: dict[str, int] = {}
        a: str | None = start
        b: str | None = other
        counted = 0
        while a is not None or b is not None:
            if a is not None:
                run = head[a]
                if run in seen_b:
                    return counted + pos[a] - min(pos[a], seen_b[run])
                seen_a[run] = (pos[a], counted)
                counted += pos[a] + 1
                a = parent[run]
            if b is not None:
                run = head[b]
                if run in seen_a:
                    entered, before = seen_a[run]
                    return before + entered - min(entered, pos[b])
                seen_b[run] = pos[b]
                b = parent[run]
        return counted
