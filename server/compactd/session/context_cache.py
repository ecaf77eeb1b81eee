"""`context_report` per leaf, extended entry by entry (session/context on long sessions).

The context at a leaf whose parent's report is known is the parent's context plus what the new
entry projects (X-8), with the model and thinking level it may set, unless the entry is a
compaction (which restarts the context). So after an append the report costs one entry however
long the path, and asking again at the same leaf costs nothing.

Reports handed out are shared: callers must not modify them. The owner must `clear` the cache
when entries change in place (pruning); appends and navigation never invalidate it.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any

from .context import context_from_path, project_entry

Entry = dict[str, Any]
Report = dict[str, Any]

__all__ = ["MAX_EXTEND", "ContextReportCache", "extend_report"]

# Entries appended since the last report that are replayed rather than rebuilding the context.
MAX_EXTEND = 256


def extend_report(report: Report, entry: Entry) -> Report | None:
    """The report at `entry`, a child of `report["leafId"]`; None for a compaction."""
    if entry.get("type") == "compaction":
        return None
    alone = context_from_path([entry])  # what this entry alone sets: model, thinking level
    thinking = report["thinkingLevel"]
    if entry.get("type") == "thinking_level_change" and isinstance(entry.get("thinkingLevel"), str):
        thinking = alone.thinking_level
    added = [{"role": m.get("role"), "entryId": entry["id"]} for m in project_entry(entry)]
    return {
        "leafId": entry["id"],
        "model": alone.model or report["model"],
        "thinkingLevel": thinking,
        "messages": report["messages"] + added if added else report["messages"],
    }


class ContextReportCache:
    """Reports of the few most recent leaves (what the next append extends)."""

    def __init__(self, size: int = 4) -> None:
        self._size = size
        self._reports: OrderedDict[str, Report] = OrderedDict()

    def report(self, by_id: Mapping[str, Entry], leaf_id: str, build: Callable[[], Report]) -> Report:
        """The report at `leaf_id` (an existing entry): cached, extended from its parent's, or
        `build()`."""
        hit = self._reports.get(leaf_id)
        if hit is None:
            # Back to the nearest known ancestor (several entries may have been appended since),
            # then forward one entry at a time.
            chain: list[Entry] = []
            entry = by_id.get(leaf_id)
            while entry is not None and hit is None and len(chain) < MAX_EXTEND:
                chain.append(entry)
                parent_id = entry.get("parentId")
                hit = self._reports.get(parent_id) if parent_id is not None else None
                entry = by_id.get(parent_id) if parent_id is not None else None
            for entry in reversed(chain if hit is not None else []):
                hit = extend_report(hit, entry) if hit is not None else None
            if hit is None:
                hit = build()
        self._reports[leaf_id] = hit
        self._reports.move_to_end(leaf_id)
        while len(self._reports) > self._size:
            self._reports.popitem(last=False)
        return hit

    def peek(self, leaf_id: str) -> Report | None:
        """The cached report at `leaf_id`, if any (no work: callers may answer on the spot)."""
        hit = self._reports.get(leaf_id)
        if hit is not None:
            self._reports.move_to_end(leaf_id)
        return hit

    def clear(self) -> None:
        self._reports.clear()

    def __len__(self) -> int:
        return len(self._reports)
