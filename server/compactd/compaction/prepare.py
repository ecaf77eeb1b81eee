"""prepareCompaction (spec §7, R-1..R-15, [PI-NEW]): what a compaction of a path would summarize,
what it would keep, and everything the summarizer needs — without calling any model.

Every message keeps the id of the entry it came from, so dry runs and the daemon can point at
entries. Decisions: D-3 (older compactions weigh nothing and are never re-emitted), D-14 (cut at
the newest valid cut point rather than keeping everything), D-25 (exact conversation text).
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, NamedTuple

from compactd.session.context import (
    ProjectedEntry,
    leading_compaction_messages,
    project_entry,
    project_path,
    repaired_message,
    replay_system_messages,
    unedited_context_entries,
)
from compactd.session.gc_pause import gc_paused

from .cut_points import CutPointResult, find_cut_point
from .file_ops import FileOperations, compute_file_lists, extract_file_ops_from_message, seed_from_details
from .serialize import (
    EncodedJsonString,
    SerializedTextCache,
    escape_wrapped,
    json_string_body,
    serialize_sourced,
    serialize_sourced_json,
)
from .settings import DEFAULT_COMPACTION_SETTINGS, CompactionSettings
from .tokens import (
    ContextUsageEstimate,
    MessageEstimates,
    calculate_context_tokens,
    estimate_context_tokens,
    estimate_tokens,
    has_valid_usage,
)

__all__ = [
    "SourcedMessage",
    "SourcedPair",
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


# One each (frozen, so shareable): made on every request that prepares nothing.
_ALREADY_COMPACTED = NotPrepared(NoCompactionReason.ALREADY_COMPACTED)
_NOTHING_TO_COMPACT = NotPrepared(NoCompactionReason.NOTHING_TO_COMPACT)
_NEEDS_MIGRATION = NotPrepared(NoCompactionReason.NEEDS_MIGRATION)


SourcedPair = tuple[str, Message]


@dataclass
class CompactionPreparation:
    """R-15 plus what our dry run reports.

    `estimated_tokens_after` is the chars/4 estimate (K-1) of the messages the rebuilt context
    would keep verbatim — everything from the first kept entry to the leaf, older compactions
    skipped (D-3) — **without** the new summary, whose size is unknown until it is generated.

    The messages are held as plain (entry id, message) pairs: a NamedTuple each costs three times
    as much to make, and the dry-run answer never needs one. `messages_to_summarize`,
    `turn_prefix_messages` and `kept_messages` give them as `SourcedMessage`s.
    """

    first_kept_entry_id: str
    first_kept_entry_index: int
    boundary_start: int
    is_split_turn: bool
    turn_start_index: int
    turn_start_entry_id: str | None
    tokens_before: int | float
    summarized: list[SourcedPair]
    turn_prefix: list[SourcedPair]
    kept: list[SourcedPair]
    estimated_tokens_after: int
    previous_summary: str | None
    file_ops: FileOperations
    settings: CompactionSettings
    cut: CutPointResult = field(repr=False)
    # Serialized text per entry, kept across requests by the caller (None: serialize afresh).
    text_cache: SerializedTextCache | None = field(default=None, repr=False, compare=False)
    # The chars/4 estimates made while preparing, per message object, for the caller's figures
    # over the same messages (`estimatedTokensSummarized`, the context's estimate): None for
    # oh-my-pi's preparation.
    estimates: MessageEstimates | None = field(default=None, repr=False, compare=False)
    # D-29: "pi", or "omp" when oh-my-pi's semantics made it (its file lists and transcript).
    compat: str = "pi"

    # Written out (keywords only), so mypyc compiles it: the one @dataclass generates runs
    # interpreted, ~1 us per dry run (a tenth of a small session's).
    def __init__(
        self, *, first_kept_entry_id: str, first_kept_entry_index: int, boundary_start: int, is_split_turn: bool,
        turn_start_index: int, turn_start_entry_id: str | None, tokens_before: int | float,
        summarized: list[SourcedPair], turn_prefix: list[SourcedPair], kept: list[SourcedPair],
        estimated_tokens_after: int, previous_summary: str | None, file_ops: FileOperations,
        settings: CompactionSettings, cut: CutPointResult, text_cache: SerializedTextCache | None = None,
        estimates: MessageEstimates | None = None, compat: str = "pi",
    ) -> None:
        self.first_kept_entry_id = first_kept_entry_id
        self.first_kept_entry_index = first_kept_entry_index
        self.boundary_start = boundary_start
        self.is_split_turn = is_split_turn
        self.turn_start_index = turn_start_index
        self.turn_start_entry_id = turn_start_entry_id
        self.tokens_before = tokens_before
        self.summarized = summarized
        self.turn_prefix = turn_prefix
        self.kept = kept
        self.estimated_tokens_after = estimated_tokens_after
        self.previous_summary = previous_summary
        self.file_ops = file_ops
        self.settings = settings
        self.cut = cut
        self.text_cache = text_cache
        self.estimates = estimates
        self.compat = compat

    def __bool__(self) -> bool:
        return True

    @cached_property
    def messages_to_summarize(self) -> list[SourcedMessage]:
        return list(map(SourcedMessage._make, self.summarized))

    @cached_property
    def turn_prefix_messages(self) -> list[SourcedMessage]:
        return list(map(SourcedMessage._make, self.turn_prefix))

    @cached_property
    def kept_messages(self) -> list[SourcedMessage]:
        return list(map(SourcedMessage._make, self.kept))

    @cached_property
    def file_lists(self) -> tuple[list[str], list[str]]:
        """(readFiles, modifiedFiles) per O-3 (oh-my-pi's rule on its files, D-29)."""
        if self.compat == "omp":
            from .omp import omp_file_lists

            return omp_file_lists(self.file_ops)
        return compute_file_lists(self.file_ops)

    @property
    def read_files(self) -> list[str]:
        return self.file_lists[0]

    @property
    def modified_files(self) -> list[str]:
        return self.file_lists[1]

    @cached_property
    def conversation_text(self) -> str:
        """The exact text placed between `<conversation>` tags of the history prompt (S-3/S-4);
        oh-my-pi's `xml` transcript when its semantics apply (D-29)."""
        if self.compat == "omp":
            return _omp_text(self.summarized)
        return serialize_sourced(self.summarized, self.text_cache, escape=escape_wrapped)

    @cached_property
    def turn_prefix_text(self) -> str | None:
        """The same for the turn-prefix prompt; None unless the turn is split."""
        if not self.is_split_turn:
            return None
        if self.compat == "omp":
            return _omp_text(self.turn_prefix)
        return serialize_sourced(self.turn_prefix, self.text_cache, escape=escape_wrapped)

    def conversation_json(self) -> EncodedJsonString:
        """`conversation_text` as an encoded JSON string in parts (the daemon's dry-run answer)."""
        if self.compat == "omp":
            return EncodedJsonString([b'"' + json_string_body(self.conversation_text) + b'"'])
        return serialize_sourced_json(self.summarized, self.text_cache, escape=escape_wrapped)

    def turn_prefix_json(self) -> EncodedJsonString | None:
        """`turn_prefix_text` likewise."""
        if not self.is_split_turn:
            return None
        if self.compat == "omp":
            return EncodedJsonString([b'"' + json_string_body(self.turn_prefix_text or "") + b'"'])
        return serialize_sourced_json(self.turn_prefix, self.text_cache, escape=escape_wrapped)


def _omp_text(pairs: list[SourcedPair]) -> str:
    from .omp import serialize_for_summary

    return serialize_for_summary([message for _, message in pairs])


def _non_system(items: Sequence[ProjectedEntry]) -> list[SourcedPair]:
    """R-10/R-11, Q16-10/Q16-41: every non-system message of each projected entry; compaction
    entries (the previous checkpoint and summary) and invisible entries contribute none."""
    out: list[SourcedPair] = []
    append = out.append
    for item in items:
        entry = item.entry
        if entry.get("type") == "compaction":
            continue
        for message in item.messages:
            if message.get("role") != "system":
                append((entry["id"], message))
    return out


def _non_system_unedited(
    listed: Sequence[Entry], start: int, end: int, ops: FileOperations | None = None
) -> list[SourcedPair]:
    """`_non_system` of `listed[start:end]` for a list without context edits (see
    `unedited_context_entries`), each entry projected on the spot, without a projected object
    per entry; with `ops`, the file operations of its assistant messages are collected in the
    same pass (O-2)."""
    out: list[SourcedPair] = []
    append = out.append
    collect = ops is not None
    for entry in listed[start:end]:
        entry_type = entry.get("type")
        if entry_type == "message":
            message = entry.get("message")
            if not isinstance(message, dict):
                continue
            if message.get("content") is None:
                message = repaired_message(message)
            role = message.get("role")
            if role == "system":
                continue
            append((entry["id"], message))
            if collect and role == "assistant":
                extract_file_ops_from_message(message, ops)  # type: ignore[arg-type]
        elif entry_type == "custom_message" or entry_type == "branch_summary":
            for message in project_entry(entry):  # user-like roles: no file operations
                append((entry["id"], message))
    return out


def estimate_projected_context_tokens(projected: Sequence[ProjectedEntry], path: Sequence[Entry]) -> ContextUsageEstimate:
    """Q16-40: provider usage + trailing estimate (K-7) only while that usage is newer than every
    `context_edit` and compaction on the path (either may have shrunk the context since); else a
    pure heuristic: the replayed system message counted once plus every non-system message."""
    messages = [m for item in projected for m in item.messages]
    estimate = estimate_context_tokens(messages)
    if estimate.last_usage_index is not None:
        # The entry of the usage message: walking back, the first item starting at or before it.
        usage_entry: Entry | None = None
        start = len(messages)
        for item in reversed(projected):
            start -= len(item.messages)
            if start <= estimate.last_usage_index:
                usage_entry = item.entry
                break
        if _usage_is_current(usage_entry, path):
            return estimate
    return _heuristic_estimate(messages)


def _usage_is_current(usage_entry: Entry | None, path: Sequence[Entry]) -> bool:
    """No context_edit or compaction follows the usage's entry on the path (walked from the end,
    so a usage near the leaf costs a few steps)."""
    for entry in reversed(path):
        if entry is usage_entry:
            return True
        if entry.get("type") in ("context_edit", "compaction"):
            return False
    return False


def _heuristic_estimate(messages: list[Message]) -> ContextUsageEstimate:
    system = replay_system_messages(messages)
    tokens = (estimate_tokens(system) if system is not None else 0) + sum(
        estimate_tokens(m) for m in messages if m.get("role") != "system"
    )
    return ContextUsageEstimate(tokens, 0, tokens, None)


def _estimate_unedited_tokens(
    listed: Sequence[Entry],
    first: list[Message] | None,
    path: Sequence[Entry],
    estimate: Callable[[Message], int] = estimate_tokens,
) -> int | float:
    """`estimate_projected_context_tokens(project_path(path), path).tokens` for a list without
    context edits, whose leading compaction (if any) projects to `first`: K-7 walks back from the
    leaf only to the newest valid usage, projecting just the entries it passes."""
    trailing = 0
    for index in range(len(listed) - 1, -1, -1):
        entry = listed[index]
        messages = first if index == 0 and first is not None else project_entry(entry)
        for message in reversed(messages):
            if has_valid_usage(message):
                if _usage_is_current(entry, path):
                    return calculate_context_tokens(message["usage"]) + trailing
                return _heuristic_estimate(_unedited_messages(listed, first)).tokens
            trailing += estimate(message)
    # No current usage: every message counts (not through the memo, which would hold them all).
    return _heuristic_estimate(_unedited_messages(listed, first)).tokens


def _unedited_messages(listed: Sequence[Entry], first: list[Message] | None) -> list[Message]:
    if first is None:
        return [m for entry in listed for m in project_entry(entry)]
    return [*first, *(m for entry in listed[1:] for m in project_entry(entry))]


def prepare_compaction(
    path_entries: Sequence[Entry],
    settings: CompactionSettings = DEFAULT_COMPACTION_SETTINGS,
    *,
    newest_cut_fallback: bool = True,
    text_cache: SerializedTextCache | None = None,
    estimates: MessageEstimates | None = None,
) -> CompactionPreparation | NotPrepared:
    """R-1..R-15 over a root-first path (normally `session.get_branch()`), run on the path's
    projection (Q16-37): context edits applied, kept-range system messages gone. Indexes in the
    result are positions in the path.

    Returns `NotPrepared` (falsy, with a reason) when the path ends with a compaction, when there
    would be nothing to summarize, or when a legacy entry lacks an id. `estimates`: the request's
    memo of message estimates (a new one when None), kept by the result.
    """
    path = list(path_entries)
    if path and path[-1].get("type") == "compaction":
        return _ALREADY_COMPACTED
    # Without context edits (the usual case) every entry projects on its own: work on the listed
    # entries directly. The same result as on `project_path` (tests/compaction/test_prepare_fast_path.py).
    # Tens of thousands of small containers on a long path, none cyclic: without the pause, the
    # collector promotes them while they live and then walks the whole session (every few calls).
    with gc_paused(len(path)):
        listed = unedited_context_entries(path)
        return _prepare(path, listed if listed is not None else project_path(path), settings,
                        newest_cut_fallback, text_cache, estimates)


def _prepare(
    path: list[Entry],
    items: list[Entry] | list[ProjectedEntry],
    settings: CompactionSettings,
    newest_cut_fallback: bool,
    text_cache: SerializedTextCache | None,
    estimates: MessageEstimates | None = None,
) -> CompactionPreparation | NotPrepared:
    """`prepare_compaction` on `items`: `project_path(path)`, or `unedited_context_entries(path)`
    when that is not None (raw entries, projected where needed)."""
    projected = items if items and isinstance(items[0], ProjectedEntry) else None

    def entry_at(index: int) -> Entry:
        return projected[index].entry if projected is not None else items[index]  # type: ignore[return-value]

    previous: Entry | None = None
    if items and entry_at(0).get("type") == "compaction":
        previous = entry_at(0)
    previous_summary: str | None = None
    if previous is not None:
        summary = previous.get("summary")
        previous_summary = summary if isinstance(summary, str) else None
    # R-3 [PI-NEW]: re-summarize what the previous compaction kept, so nothing is lost.
    window_start = 1 if previous is not None else 0

    count = len(items)
    # The cut-point walk, `tokens_before` and `estimated_tokens_after` estimate mostly the same
    # newest messages.
    if estimates is None:
        estimates = MessageEstimates()
    estimate = estimates.of
    cut = find_cut_point(items, window_start, count, settings.keep_recent_tokens,
                         newest_cut_fallback=newest_cut_fallback, estimate=estimate)
    if cut.first_kept_entry_index >= count:
        return _NOTHING_TO_COMPACT  # nothing in the window
    first_kept = entry_at(cut.first_kept_entry_index)
    if not first_kept.get("id"):
        return _NEEDS_MIGRATION

    # cumulative file tracking, seeded from the previous pi-made compaction.
    ops = FileOperations()
    if previous is not None:
        seed_from_details(previous, ops)
    history_end = cut.turn_start_index if cut.is_split_turn else cut.first_kept_entry_index
    if projected is not None:
        to_summarize = _non_system(projected[window_start:history_end])
        prefix = _non_system(projected[cut.turn_start_index : cut.first_kept_entry_index]) if cut.is_split_turn else []
        for _, message in (*to_summarize, *prefix):
            if message.get("role") == "assistant":  # O-2: only assistant tool calls count
                extract_file_ops_from_message(message, ops)
    else:
        to_summarize = _non_system_unedited(items, window_start, history_end, ops)  # type: ignore[arg-type]
        prefix = _non_system_unedited(items, cut.turn_start_index, cut.first_kept_entry_index, ops) if cut.is_split_turn else []  # type: ignore[arg-type]
    if not to_summarize and not prefix:
        return _NOTHING_TO_COMPACT
    if projected is not None:
        kept = _non_system(projected[cut.first_kept_entry_index :])
    else:
        kept = _non_system_unedited(items, cut.first_kept_entry_index, count)  # type: ignore[arg-type]

    # R-5 [PI-NEW]: the context that is about to be replaced (its newest messages are estimated
    # already: the cut-point walk started there).
    if projected is not None:
        tokens_before = estimate_projected_context_tokens(projected, path).tokens
    else:
        first = leading_compaction_messages(previous) if previous is not None else None
        tokens_before = _estimate_unedited_tokens(items, first, path, estimate)  # type: ignore[arg-type]

    turn_start = entry_at(cut.turn_start_index) if cut.is_split_turn else None
    boundary = entry_at(window_start) if window_start < count else None
    position = _positions(path, items)
    return CompactionPreparation(
        first_kept_entry_id=first_kept["id"],
        first_kept_entry_index=position(first_kept, cut.first_kept_entry_index),
        boundary_start=position(boundary, window_start) if boundary is not None else len(path),
        is_split_turn=cut.is_split_turn,
        turn_start_index=position(turn_start, cut.turn_start_index) if turn_start is not None else -1,
        turn_start_entry_id=turn_start["id"] if turn_start is not None else None,
        tokens_before=tokens_before,
        summarized=to_summarize,
        turn_prefix=prefix,
        # Kept verbatim after the new compaction: its kept-range system messages go (Q16-11).
        kept=kept,
        estimated_tokens_after=sum(estimate(message) for _, message in kept),
        previous_summary=previous_summary,
        file_ops=ops,
        settings=settings,
        cut=cut,
        text_cache=text_cache,
        estimates=estimates,
    )


def _positions(path: list[Entry], items: Sequence[Any]) -> Any:
    """(entry, index in `items`) → the entry's index in `path`: the same index when `items` is
    the path itself (no compaction, no edits), else found by identity. The entries after the
    latest compaction end both lists, so an entry of that tail sits as far from the end in
    each; one of the compaction's kept range sits a little before that (the range lost its
    system messages): searched back from there, a step or two."""
    if items is path:
        return lambda entry, index: index
    shift = len(path) - len(items)

    def position(entry: Entry, index: int) -> int:
        for at in range(min(index + shift, len(path) - 1), -1, -1):
            if path[at] is entry:
                return at
        return list(map(id, path)).index(id(entry))  # (the compaction itself lies after its kept range)

    return position
