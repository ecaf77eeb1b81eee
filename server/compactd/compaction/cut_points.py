"""Where compaction cuts the path (spec §6, [PI-NEW] projection rules, decisions D-3 and D-14).

Entries are classified by what they contribute to the model's context (X-8 projection), not by
their type: a `custom_message` or a non-empty `branch_summary` is a user-like message, an empty
branch summary is invisible. Compaction entries are never cut points, never start a turn and, per
D-3, weigh nothing in the budget walk.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from compactd.session.context import ProjectedEntry, project_entry

from .tokens import estimate_tokens

__all__ = [
    "CUT_POINT_ROLES",
    "TURN_START_ROLES",
    "CutPointResult",
    "entry_tokens",
    "is_valid_cut_point",
    "is_turn_start",
    "find_valid_cut_points",
    "find_turn_start_index",
    "find_cut_point",
]

Entry = dict[str, Any]
# A raw path entry (projected on the fly, no edits) or an entry of `project_path` (Q16-38: cut
# search runs on the edited projection, so an omitted entry is invisible and weighs nothing).
Item = Entry | ProjectedEntry


def _type(item: Item) -> Any:
    return item.entry.get("type") if isinstance(item, ProjectedEntry) else item.get("type")


def _messages(item: Item) -> list[dict[str, Any]]:
    if isinstance(item, ProjectedEntry):
        return item.messages
    return project_entry(item)

# P-2: a cut may start the kept suffix at any of these roles — never at a tool result.
CUT_POINT_ROLES = frozenset(
    {"user", "developer", "assistant", "bashExecution", "custom", "branchSummary", "compactionSummary"}
)
# P-4: roles that open a turn (assistant replies and tool results continue one).
TURN_START_ROLES = CUT_POINT_ROLES - {"assistant"}


@dataclass
class CutPointResult:
    """P-13. `turn_start_index` is -1 unless the cut splits a turn."""

    first_kept_entry_index: int
    turn_start_index: int
    is_split_turn: bool

    # Written out, so mypyc compiles it (see SessionContext.__init__); not frozen, as a frozen
    # dataclass can only be made by the generated one, ~0.6 us per preparation.
    def __init__(self, first_kept_entry_index: int, turn_start_index: int, is_split_turn: bool) -> None:
        self.first_kept_entry_index = first_kept_entry_index
        self.turn_start_index = turn_start_index
        self.is_split_turn = is_split_turn


def entry_tokens(entry: Item, estimate: Callable[[dict[str, Any]], int] = estimate_tokens) -> int:
    """P-9 [PI-NEW]: K-1 summed over the entry's projected messages (compaction entries: 0, D-3).
    `estimate`: K-1 of one message (a caller may remember them)."""
    if isinstance(entry, ProjectedEntry):
        if entry.entry.get("type") == "compaction":
            return 0
        return sum(map(estimate, entry.messages))
    entry_type = entry.get("type")
    if entry_type == "message":  # one message (a null content counts 0 repaired or not)
        message = entry.get("message")
        return estimate(message) if isinstance(message, dict) else 0
    if entry_type == "compaction":
        return 0
    return sum(map(estimate, project_entry(entry)))


def _has_role(entry: Item, roles: frozenset[str]) -> bool:
    if isinstance(entry, ProjectedEntry):
        if entry.entry.get("type") == "compaction":
            return False
        messages = entry.messages
    else:
        entry_type = entry.get("type")
        if entry_type == "message":  # its one message (repairing a null content keeps the role)
            message = entry.get("message")
            return isinstance(message, dict) and message.get("role") in roles
        if entry_type == "compaction":
            return False
        messages = project_entry(entry)
    for message in messages:
        if message.get("role") in roles:
            return True
    return False


def is_valid_cut_point(entry: Item) -> bool:
    """P-1/P-2."""
    return _has_role(entry, CUT_POINT_ROLES)


def is_turn_start(entry: Item) -> bool:
    """P-4."""
    return _has_role(entry, TURN_START_ROLES)


def find_valid_cut_points(entries: Sequence[Item], start_index: int, end_index: int) -> list[int]:
    return [i for i in range(start_index, end_index) if is_valid_cut_point(entries[i])]


def _first_cut_point(entries: Sequence[Item], start_index: int, end_index: int) -> int:
    """The oldest valid cut point in `[start, end)`, or -1."""
    return next((i for i in range(start_index, end_index) if is_valid_cut_point(entries[i])), -1)


def _last_cut_point(entries: Sequence[Item], start_index: int, end_index: int) -> int:
    """The newest valid cut point in `[start, end)`, or -1."""
    return next((i for i in range(end_index - 1, start_index - 1, -1) if is_valid_cut_point(entries[i])), -1)


def find_turn_start_index(entries: Sequence[Item], entry_index: int, start_index: int) -> int:
    """P-6: the nearest turn start at or before `entry_index` (not before `start_index`), or -1."""
    for i in range(entry_index, start_index - 1, -1):
        if is_turn_start(entries[i]):
            return i
    return -1


def _recovery_omission_suffix(suffix: Sequence[Item]) -> bool:
    """Q16-39: everything after the cut is invisible, none is a compaction, at least one is an
    assistant answer hidden by a `context_edit`, and no non-null replacement in the suffix targets
    anything but an omitted suffix entry. Then the last input becomes a summarized turn prefix."""
    if not suffix or not all(isinstance(item, ProjectedEntry) for item in suffix):
        return False
    items = [item for item in suffix if isinstance(item, ProjectedEntry)]

    def visible(item: ProjectedEntry) -> bool:
        return item.entry.get("type") != "context_edit" and bool(project_entry(item.entry))

    omitted = {item.entry.get("id") for item in items if visible(item) and not item.messages}
    for item in items:
        entry = item.entry
        if entry.get("type") == "compaction" or (visible(item) and item.messages):
            return False
        if entry.get("type") == "context_edit" and entry.get("replacement") is not None:
            if entry.get("targetId") not in omitted:
                return False
    return any(
        item.entry.get("id") in omitted
        and item.entry.get("type") == "message"
        and item.entry["message"].get("role") == "assistant"
        for item in items
    )


def find_cut_point(
    entries: Sequence[Item],
    start_index: int,
    end_index: int,
    keep_recent_tokens: int,
    *,
    newest_cut_fallback: bool = True,
    estimate: Callable[[dict[str, Any]], int] = estimate_tokens,
) -> CutPointResult:
    """P-7..P-13: keep roughly `keep_recent_tokens` of the newest entries in `[start, end)`.

    Walking newest → oldest, the first entry whose running total reaches the budget picks the
    nearest valid cut point at or after it. When there is none (the crossing entry is, e.g., one
    huge tool result after the newest cut point), Pi keeps everything; with
    `newest_cut_fallback` (D-14, our default) we cut at the newest valid cut point instead, so the
    older history can still be summarized while the tool call stays with its result.
    `estimate` is K-1 of one message (`estimate_tokens`, or a caller's memo of it).
    """
    # Cut points are found lazily around where the budget walk stops: the walk only visits the
    # newest ~keep_recent_tokens, so a long uncompacted path is not classified entry by entry.
    cut_index = -1
    crossed = False
    accumulated = 0
    for i in range(end_index - 1, start_index - 1, -1):
        tokens = entry_tokens(entries[i], estimate)
        if tokens == 0:
            continue
        accumulated += tokens
        if accumulated >= keep_recent_tokens:
            crossed = True
            at_or_after = _first_cut_point(entries, i, end_index)
            if at_or_after >= 0:
                cut_index = at_or_after
            elif newest_cut_fallback:
                cut_index = _last_cut_point(entries, start_index, i)
            break
    if cut_index < 0:
        cut_index = _first_cut_point(entries, start_index, end_index)  # P-8: keep everything
        if cut_index < 0:
            return CutPointResult(start_index, -1, False)  # no valid cut point at all

    if crossed and _recovery_omission_suffix(entries[cut_index + 1 : end_index]):
        cut_index += 1  # Q16-39

    # P-11: carry metadata entries just before the cut (model/thinking changes, labels, custom
    # entries, empty branch summaries, context edits, omitted entries) into the kept suffix; stop
    # at a compaction or anything the model sees, system messages included (Q16-9).
    while cut_index > start_index:
        previous = entries[cut_index - 1]
        if _type(previous) == "compaction" or _messages(previous):
            break
        cut_index -= 1

    # P-12 [PI-NEW]: a cut at a turn start does not split anything.
    if is_turn_start(entries[cut_index]):
        return CutPointResult(cut_index, -1, False)
    turn_start = find_turn_start_index(entries, cut_index, start_index)
    return CutPointResult(cut_index, turn_start, turn_start != -1)
