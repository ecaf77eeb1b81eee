"""Branch summarization inputs (spec §12.1–12.3, B-1..B-9; decisions D-6, D-13).

Which entries a user abandons when moving the leaf, which of their messages fit the summary
budget, and which files they touched. Pure: the tree is given as the `by_id` index.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from compactd.session.clock import iso_to_ms
from compactd.session.context import apply_edit, compaction_summary_message, latest_edits, project_entry
from compactd.session.tree import path_to

from .file_ops import FileOperations, compute_file_lists, extract_file_ops_from_message, seed_from_details
from .prepare import SourcedMessage
from .settings import DEFAULT_CONTEXT_WINDOW, DEFAULT_RESERVE_TOKENS
from .tokens import estimate_tokens

__all__ = [
    "MIN_BRANCH_TOKEN_BUDGET",
    "BranchCollection",
    "BranchPreparation",
    "collect_entries_for_branch_summary",
    "branch_entry_message",
    "prepare_branch_entries",
    "branch_token_budget",
]

Entry = dict[str, Any]
Message = dict[str, Any]

# B-9/D-13: a non-positive budget (reserve >= window) would silently mean "no limit" in Pi. The
# engine reports such settings as an error; should one reach this layer anyway we use this small
# budget (room for a few summaries and the latest messages) rather than an unbounded prompt.
MIN_BRANCH_TOKEN_BUDGET = 1024


@dataclass(frozen=True)
class BranchCollection:
    """B-1..B-4: abandoned entries (chronological) and the common ancestor."""

    entries: list[Entry]
    common_ancestor_id: str | None

    @property
    def entry_ids(self) -> list[str]:
        return [e["id"] for e in self.entries]


def collect_entries_for_branch_summary(
    by_id: Mapping[str, Entry], old_leaf_id: str | None, target_id: str
) -> BranchCollection:
    """Walk from the old leaf back to the deepest entry shared with the target's path. The walk
    does not stop at compaction entries (D-6): their summaries become part of the input."""
    if not old_leaf_id:
        return BranchCollection([], None)
    old_path = {e["id"] for e in path_to(by_id, old_leaf_id)}
    common: str | None = None
    for shared in reversed(path_to(by_id, target_id)):
        if shared["id"] in old_path:
            common = shared["id"]
            break
    collected: list[Entry] = []
    seen: set[str] = set()
    current: str | None = old_leaf_id
    while current and current != common and current not in seen:
        entry = by_id.get(current)
        if entry is None:
            break
        seen.add(current)
        collected.append(entry)
        current = entry.get("parentId")
    collected.reverse()
    return BranchCollection(collected, common)


def branch_entry_message(entry: Entry, edit: Entry | None = None) -> Message | None:
    """B-5: the message an entry contributes to a branch summary. Tool results are left out (the
    assistant's tool call carries the context); a branch summary counts even when empty; a
    compaction contributes its summary (never its checkpoint, Q16-19). `edit` is the latest
    `context_edit` aimed at the entry among the collected ones (Q16-28): an omitted entry gives
    nothing, a replaced one its new content. System messages are kept (Q16-12): they weigh in
    the budget but serialize to nothing."""
    kind = entry.get("type")
    if kind == "message":
        projected = apply_edit(project_entry(entry), edit)
        if not projected or projected[0].get("role") == "toolResult":
            return None
        return projected[0]
    if kind == "custom_message":
        projected = apply_edit(project_entry(entry), edit)
        return projected[0] if projected else None
    if kind == "branch_summary":
        summary = entry.get("summary")
        return {
            "role": "branchSummary",
            "summary": summary if isinstance(summary, str) else "",
            "fromId": entry.get("fromId"),
            "timestamp": iso_to_ms(entry.get("timestamp")),
        }
    if kind == "compaction":
        return compaction_summary_message(entry)
    return None


@dataclass
class BranchPreparation:
    """B-8: the messages to summarize (chronological), file operations and their estimate."""

    messages: list[SourcedMessage]
    file_ops: FileOperations = field(default_factory=FileOperations)
    total_tokens: int = 0

    @property
    def file_lists(self) -> tuple[list[str], list[str]]:
        return compute_file_lists(self.file_ops)


def prepare_branch_entries(entries: Sequence[Entry], token_budget: int = 0) -> BranchPreparation:
    """B-6/B-7: harvest pi-made branch-summary file lists from every entry, then take messages
    newest → oldest until the budget (0 = unlimited) would overflow. A compaction or branch summary
    that overflows is still taken while the total is below 90% of the budget. File operations of
    the message that overflowed are kept even though the message is not."""
    ops = FileOperations()
    for entry in entries:
        if entry.get("type") == "branch_summary":
            seed_from_details(entry, ops)

    edits = latest_edits(list(entries))
    taken, total = take_newest_within_budget(
        entries,
        lambda entry: branch_entry_message(entry, edits.get(entry.get("id"))),  # type: ignore[arg-type]
        lambda message: extract_file_ops_from_message(message, ops),
        estimate_tokens,
        token_budget,
    )
    return BranchPreparation(taken, ops, total)


def take_newest_within_budget(
    entries: Sequence[Entry],
    message_of: Callable[[Entry], Message | None],
    note_file_ops: Callable[[Message], None],
    count_tokens: Callable[[Message], int],
    token_budget: int,
) -> tuple[list[SourcedMessage], int]:
    """B-7, shared by Pi's and oh-my-pi's branch preparation (they differ only in which message an
    entry gives and how it is counted): messages newest → oldest until the budget (0 = unlimited)
    would overflow; an overflowing compaction or branch summary is still taken while the total is
    below 90% of the budget. File operations of every message looked at are noted, the one that
    overflowed included. Returns the messages in chronological order and their total."""
    taken: list[SourcedMessage] = []
    total = 0
    for entry in reversed(entries):
        message = message_of(entry)
        if message is None:
            continue
        note_file_ops(message)
        tokens = count_tokens(message)
        if token_budget > 0 and total + tokens > token_budget:
            if entry.get("type") in ("compaction", "branch_summary") and total < token_budget * 0.9:
                taken.append(SourcedMessage(entry["id"], message))
                total += tokens
            break
        taken.append(SourcedMessage(entry["id"], message))
        total += tokens
    taken.reverse()
    return taken, total


def branch_token_budget(context_window: int | None, reserve_tokens: int = DEFAULT_RESERVE_TOKENS) -> int:
    """B-9: `(contextWindow or 128000) − reserveTokens`, clamped to `MIN_BRANCH_TOKEN_BUDGET`
    when that is not positive (D-13; Pi would treat it as unlimited)."""
    window = context_window or DEFAULT_CONTEXT_WINDOW
    budget = window - reserve_tokens
    return budget if budget > 0 else MIN_BRANCH_TOKEN_BUDGET
