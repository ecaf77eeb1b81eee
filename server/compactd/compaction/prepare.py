"""prepareCompaction (spec §7, R-1..R-15, [PI-NEW]): what a compaction of a path would summarize,
what it would keep, and everything the summarizer needs — without calling any model.

Every message keeps the id of the entry it came from, so dry runs and the daemon can point at
entries. Decisions: D-3 (older compactions weigh nothing and are never re-emitted), D-14 (cut at
the newest valid cut point rather than keeping everything), D-25 (exact conversation text).
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, NamedTuple

from compactd.session.context import context_from_path, project_entry

from .cut_points import CutPointResult, find_cut_point
from .file_ops import FileOperations, compute_file_lists, extract_file_ops_from_message, seed_from_details
from .prompts import escape_wrapped
from .serialize import SerializedTextCache, serialize_sourced
from .settings import DEFAULT_COMPACTION_SETTINGS, CompactionSettings
from .tokens import calculate_context_tokens, estimate_context_tokens, estimate_tokens, has_valid_usage, sum_estimates

__all__ = [
    "SourcedMessage",
    "NoCompactionReason",
    "NotPrepared",
    "CompactionPreparation",
    "prepare_compaction",
    "messages_of",
]

Entry = dict[str, Any]
Message = dict[str, Any]


class SourcedMessage(NamedTuple):
    """An agent message together with the id of the session entry it was projected from."""

    entry_id: str
    message: Message


def _sourced(pair: tuple[str, Message]) -> SourcedMessage:
    """`SourcedMessage(*pair)` without the generated Python-level `__new__` (hot loops)."""
    return tuple.__new__(SourcedMessage, pair)


def messages_of(sourced: Sequence[SourcedMessage]) -> list[Message]:
    return [item.message for item in sourced]


class NoCompactionReason(str, enum.Enum):
    ALREADY_COMPACTED = "already_compacted"  # the path ends with a compaction
    NOTHING_TO_COMPACT = "nothing_to_compact"  # nothing would be summarized
    NEEDS_MIGRATION = "needs_migration"  # the first kept entry has no id


_REASON_MESSAGES = {
    NoCompactionReason.ALREADY_COMPACTED: "Already compacted",
    NoCompactionReason.NOTHING_TO_COMPACT: "Nothing to compact (session too small)",
    NoCompactionReason.NEEDS_MIGRATION: "First kept entry has no UUID - session may need migration",
}


@dataclass(frozen=True)
class NotPrepared:
    """Why there is nothing to compact. Falsy, so `if not prep:` reads naturally."""

    reason: NoCompactionReason

    @property
    def message(self) -> str:
        """The user-facing error Pi shows for this case (M-30)."""
        return _REASON_MESSAGES[self.reason]

    def __bool__(self) -> bool:
        return False


@dataclass
class CompactionPreparation:
    """R-15 plus what our dry run reports.

    `estimated_tokens_after` is the chars/4 estimate (K-1) of the messages the rebuilt context
    would keep verbatim — everything from the first kept entry to the leaf, older compactions
    skipped (D-3) — **without** the new summary, whose size is unknown until it is generated.
    """

    first_kept_entry_id: str
    first_kept_entry_index: int
    boundary_start: int
    is_split_turn: bool
    turn_start_index: int
    turn_start_entry_id: str | None
    tokens_before: int | float
    messages_to_summarize: list[SourcedMessage]
    turn_prefix_messages: list[SourcedMessage]
    kept_messages: list[SourcedMessage]
    previous_summary: str | None
    file_ops: FileOperations
    settings: CompactionSettings
    cut: CutPointResult = field(repr=False)
    # Serialized text per entry, kept across requests by the caller (None: serialize afresh).
    text_cache: SerializedTextCache | None = field(default=None, repr=False, compare=False)

    def __bool__(self) -> bool:
        return True

    @property
    def estimated_tokens_after(self) -> int:
        return sum_estimates(messages_of(self.kept_messages))

    @cached_property
    def file_lists(self) -> tuple[list[str], list[str]]:
        """(readFiles, modifiedFiles) per O-3."""
        return compute_file_lists(self.file_ops)

    @property
    def read_files(self) -> list[str]:
        return self.file_lists[0]

    @property
    def modified_files(self) -> list[str]:
        return self.file_lists[1]

    @cached_property
    def conversation_text(self) -> str:
        """The exact text placed between `<conversation>` tags of the history prompt (S-3/S-4)."""
        return serialize_sourced(self.messages_to_summarize, self.text_cache, escape=escape_wrapped)

    @cached_property
    def turn_prefix_text(self) -> str | None:
        """The same for the turn-prefix prompt; None unless the turn is split."""
        if not self.is_split_turn:
            return None
        return serialize_sourced(self.turn_prefix_messages, self.text_cache, escape=escape_wrapped)


def _first_projected(entries: Sequence[Entry], start: int, end: int) -> list[SourcedMessage]:
    """R-10/R-11: the first projected message of each entry in `[start, end)`; compaction entries
    and entries the model does not see are skipped."""
    out: list[SourcedMessage] = []
    for entry in entries[start:end]:
        entry_type = entry.get("type")
        if entry_type == "message":
            # The common case without a call: a stored message projects to itself.
            message = entry.get("message")
            if isinstance(message, dict) and message.get("content") is not None:
                out.append(_sourced((entry["id"], message)))
                continue
        elif entry_type == "compaction":
            continue
        projected = project_entry(entry)
        if projected:
            out.append(SourcedMessage(entry["id"], projected[0]))
    return out


def _all_projected(entries: Sequence[Entry]) -> list[SourcedMessage]:
    out: list[SourcedMessage] = []
    for entry in entries:
        if entry.get("type") == "compaction":
            continue  # D-3
        out.extend(SourcedMessage(entry["id"], m) for m in project_entry(entry))
    return out


def _tokens_before(path: Sequence[Entry]) -> int | float:
    """K-7 over the path's context. The context ends with the projections of every entry after
    the latest compaction (of the whole path when there is none), so when the newest valid usage
    lies there only the messages after it are needed; otherwise the whole context is built."""
    start = 0
    for i in range(len(path) - 1, -1, -1):
        if path[i].get("type") == "compaction":
            start = i + 1
            break
    trailing = 0
    for i in range(len(path) - 1, start - 1, -1):
        messages = project_entry(path[i])
        for message in reversed(messages):
            if has_valid_usage(message):
                return calculate_context_tokens(message["usage"]) + trailing
            trailing += estimate_tokens(message)
    return estimate_context_tokens(context_from_path(list(path)).messages).tokens


def prepare_compaction(
    path_entries: Sequence[Entry],
    settings: CompactionSettings = DEFAULT_COMPACTION_SETTINGS,
    *,
    newest_cut_fallback: bool = True,
    text_cache: SerializedTextCache | None = None,
) -> CompactionPreparation | NotPrepared:
    """R-1..R-15 over a root-first path (normally `session.get_branch()`).

    Returns `NotPrepared` (falsy, with a reason) when the path ends with a compaction, when there
    would be nothing to summarize, or when a legacy entry lacks an id.
    """
    path = list(path_entries)
    if path and path[-1].get("type") == "compaction":
        return NotPrepared(NoCompactionReason.ALREADY_COMPACTED)

    previous_index = -1
    for i in range(len(path) - 1, -1, -1):
        if path[i].get("type") == "compaction":
            previous_index = i
            break

    previous_summary: str | None = None
    boundary_start = 0
    if previous_index >= 0:
        previous = path[previous_index]
        summary = previous.get("summary")
        previous_summary = summary if isinstance(summary, str) else None
        # R-3 [PI-NEW]: re-summarize what the previous compaction kept, so nothing is lost.
        kept_id = previous.get("firstKeptEntryId")
        found = next((i for i, e in enumerate(path) if e.get("id") == kept_id), -1) if kept_id is not None else -1
        boundary_start = found if found >= 0 else previous_index + 1
    boundary_end = len(path)

    # R-5 [PI-NEW]: the context that is about to be replaced.
    tokens_before = _tokens_before(path)

    cut = find_cut_point(
        path, boundary_start, boundary_end, settings.keep_recent_tokens, newest_cut_fallback=newest_cut_fallback
    )
    if cut.first_kept_entry_index >= len(path):
        return NotPrepared(NoCompactionReason.NOTHING_TO_COMPACT)  # empty path
    first_kept = path[cut.first_kept_entry_index]
    if not first_kept.get("id"):
        return NotPrepared(NoCompactionReason.NEEDS_MIGRATION)

    history_end = cut.turn_start_index if cut.is_split_turn else cut.first_kept_entry_index
    to_summarize = _first_projected(path, boundary_start, history_end)
    prefix = _first_projected(path, cut.turn_start_index, cut.first_kept_entry_index) if cut.is_split_turn else []
    if not to_summarize and not prefix:
        return NotPrepared(NoCompactionReason.NOTHING_TO_COMPACT)

    # cumulative file tracking, seeded from the previous pi-made compaction.
    ops = FileOperations()
    if previous_index >= 0:
        seed_from_details(path[previous_index], ops)
    for item in (*to_summarize, *prefix):
        if item.message.get("role") == "assistant":  # O-2: only assistant tool calls count
            extract_file_ops_from_message(item.message, ops)

    turn_start_id = path[cut.turn_start_index]["id"] if cut.is_split_turn else None
    return CompactionPreparation(
        first_kept_entry_id=first_kept["id"],
        first_kept_entry_index=cut.first_kept_entry_index,
        boundary_start=boundary_start,
        is_split_turn=cut.is_split_turn,
        turn_start_index=cut.turn_start_index,
        turn_start_entry_id=turn_start_id,
        tokens_before=tokens_before,
        messages_to_summarize=to_summarize,
        turn_prefix_messages=prefix,
        kept_messages=_all_projected(path[cut.first_kept_entry_index :]),
        previous_summary=previous_summary,
        file_ops=ops,
        settings=settings,
        cut=cut,
        text_cache=text_cache,
    )
