"""The JSON shapes shared by the command line (`--json`) and the daemon, built from an in-memory
session. Keys are camelCase and in the documented order, so CLI and protocol answers are
identical. No I/O here: callers load the session (CLI) or already hold it (daemon).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from compactd.session.context import project_entry, recent_path
from compactd.session.gc_pause import gc_paused
from compactd.session.store import EntryNotFoundError
from compactd.session.tree import path_to

from .branch import (
    branch_token_budget,
    collect_entries_for_branch_summary,
    prepare_branch_entries,
)
from .context_totals import ContextTotals, TotalsCache, counter_for, totals_at
from .exact_tokens import ExactTokenCache, count_entry_messages
from .figures import compaction_figures, path_context_tokens, summarized_entries
from .prepare import CompactionPreparation, NotPrepared, prepare_compaction
from .prune import DEFAULT_PRUNE_SETTINGS, PruneSettings, plan_prune
from .serialize import (
    SerializedTextCache,
    escape_wrapped,
    serialize_sourced_counted,
    serialize_sourced_json_counted,
)
from .settings import (
    DEFAULT_COMPACTION_SETTINGS,
    DEFAULT_CONTEXT_WINDOW,
    DEFAULT_KEEP_RECENT_TOKENS,
    DEFAULT_RESERVE_TOKENS,
    CompactionSettings,
)
from .tokens import MessageEstimates, estimate_tokens, should_compact

__all__ = [
    "SessionLike",
    "branch_report",
    "context_totals",
    "path_for",
    "preparation_json",
    "prepare_path_for",
    "prepare_report",
    "prepared_with_context",
    "prune_report",
    "recent_path_for",
    "run_prepare",
    "stats_report",
    "summary_figures",
]

Entry = dict[str, Any]


class SessionLike(Protocol):
    """What the reports read from a session (`compactd.session.Session` fits)."""

    entries: list[Entry]
    by_id: dict[str, Entry]
    leaf_id: str | None


def path_for(session: SessionLike, leaf_id: str | None = None) -> list[Entry]:
    """Root-first path to `leaf_id` (default: the session's leaf). Unknown id → EntryNotFoundError."""
    if leaf_id is not None and leaf_id not in session.by_id:
        raise EntryNotFoundError(leaf_id)
    return path_to(session.by_id, leaf_id if leaf_id is not None else session.leaf_id)


def recent_path_for(session: SessionLike, leaf_id: str | None = None) -> list[Entry]:
    """The tail of `path_for` that context, model and compaction preparation depend on
    (`session.context.recent_path`): constant work per request however long the session is."""
    if leaf_id is not None and leaf_id not in session.by_id:
        raise EntryNotFoundError(leaf_id)
    return recent_path(session.by_id, leaf_id if leaf_id is not None else session.leaf_id)


def prepare_path_for(session: SessionLike, leaf_id: str | None = None) -> list[Entry]:
    """The tail of `path_for` that a dry run reads (Pi's preparation and the context's estimate):
    `recent_path_for` without the model and thinking level, which neither needs."""
    if leaf_id is not None and leaf_id not in session.by_id:
        raise EntryNotFoundError(leaf_id)
    return recent_path(session.by_id, leaf_id if leaf_id is not None else session.leaf_id, settings=False)


def _sourced_json(items: Sequence[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    """(entry id, message) pairs (`SourcedMessage`s or plain tuples) as the answer lists them."""
    return [{"role": message.get("role"), "entryId": entry_id} for entry_id, message in items]


def run_prepare(
    session: SessionLike,
    leaf_id: str | None = None,
    keep_recent_tokens: int | None = None,
    reserve_tokens: int | None = None,
    compat: str = "pi",
) -> CompactionPreparation | NotPrepared:
    settings = _compaction_settings(keep_recent_tokens, reserve_tokens)
    if compat == "omp":  # D-29: oh-my-pi reads the whole path (its latest usage may lie before the tail)
        from .omp import prepare_omp

        return prepare_omp(path_for(session, leaf_id), settings)
    # The recent tail gives the whole path's answer (see `prepare_report`); indexes are the tail's.
    return prepare_compaction(prepare_path_for(session, leaf_id), settings)


def _prepared(session: SessionLike, leaf_key: str | None, settings: CompactionSettings, compat: str,
              text_cache: SerializedTextCache | None = None) -> tuple[CompactionPreparation | NotPrepared, list[Entry]]:
    """The preparation at `leaf_key` and the path it read, which holds everything the leaf's
    context depends on: Pi's reads the recent tail (see `prepare_report`), oh-my-pi's the whole
    path (D-29: its latest usage may lie before the tail)."""
    if compat == "omp":
        from .omp import prepare_omp

        path = path_to(session.by_id, leaf_key) if leaf_key is not None else []
        return prepare_omp(path, settings), path
    path = recent_path(session.by_id, leaf_key, settings=False)
    return prepare_compaction(path, settings, text_cache=text_cache), path


def prepared_with_context(
    session: SessionLike,
    leaf_id: str | None = None,
    keep_recent_tokens: int | None = None,
    reserve_tokens: int | None = None,
    compat: str = "pi",
) -> tuple[CompactionPreparation | NotPrepared, int | None]:
    """`run_prepare` and the chars/4 estimate of the context at the leaf (`preparation_json`'s
    `context_tokens`; None when nothing was prepared), from one walk and one set of estimates."""
    if leaf_id is not None and leaf_id not in session.by_id:
        raise EntryNotFoundError(leaf_id)
    leaf_key = leaf_id if leaf_id is not None else session.leaf_id
    prep, path = _prepared(session, leaf_key, _compaction_settings(keep_recent_tokens, reserve_tokens), compat)
    if not isinstance(prep, CompactionPreparation) or leaf_key is None:
        return prep, None
    return prep, path_context_tokens(path, leaf_key, None, prep.estimates)


def _compaction_settings(keep_recent_tokens: int | None, reserve_tokens: int | None) -> CompactionSettings:
    if keep_recent_tokens is None and reserve_tokens is None:
        return DEFAULT_COMPACTION_SETTINGS  # (a frozen dataclass costs a microsecond to make)
    return CompactionSettings(
        reserve_tokens=DEFAULT_RESERVE_TOKENS if reserve_tokens is None else reserve_tokens,
        keep_recent_tokens=DEFAULT_KEEP_RECENT_TOKENS if keep_recent_tokens is None else keep_recent_tokens,
    )


def preparation_json(prep: CompactionPreparation, *, context_tokens: int, include_text: bool = True,
                     text_as_json: bool = False, texts: tuple[Any, Any, int] | None = None) -> dict[str, Any]:
    """The dry-run answer; without `include_text`, `conversationText` and `turnPrefixText` are
    null (nothing serialized). With `text_as_json` the two texts are `EncodedJsonString`s, for a
    writer that sends their parts as they are (`rpc/answers.py`). `context_tokens`: the chars/4
    estimate of the context at the leaf (`figures.estimated_context_tokens`), the figure a
    compaction made there shows as its `contextBefore`. `texts`: `summary_texts(prep, text_as_json)`
    when the caller made it already."""
    cache, estimates = prep.text_cache, prep.estimates
    conversation: Any = None
    turn_prefix: Any = None
    if texts is None and include_text and prep.compat == "pi":
        texts = summary_texts(prep, text_as_json)
    if texts is not None:
        conversation, turn_prefix, summarized = texts
    else:
        if include_text and text_as_json:
            conversation, turn_prefix = prep.conversation_json(), prep.turn_prefix_json()
        elif include_text:
            conversation, turn_prefix = prep.conversation_text, prep.turn_prefix_text
        summarized = _estimate_pairs(prep.summarized, cache, estimates) + _estimate_pairs(prep.turn_prefix, cache, estimates)
    # oh-my-pi's estimatedTokensAfter is its own (byte-based) estimate; the comparison needs chars/4.
    kept = prep.estimated_tokens_after if prep.compat == "pi" else _estimate_pairs(prep.kept, cache, estimates)
    return {
        "firstKeptEntryId": prep.first_kept_entry_id,
        "isSplitTurn": prep.is_split_turn,
        "turnStartEntryId": prep.turn_start_entry_id,
        "tokensBefore": prep.tokens_before,
        "messagesToSummarize": _sourced_json(prep.summarized),
        "turnPrefixMessages": _sourced_json(prep.turn_prefix),
        "previousSummary": prep.previous_summary,
        "readFiles": prep.read_files,
        "modifiedFiles": prep.modified_files,
        "conversationText": conversation,
        "turnPrefixText": turn_prefix,
        "estimatedTokensAfter": prep.estimated_tokens_after,
        # Like with like, all chars/4 estimates (`tokensBefore` is usage): the context now, as the
        # tree shows a compaction's context before; what is summarized; what is kept verbatim.
        "estimatedTokensSummarized": summarized,
        "estimatedTokensBefore": context_tokens,
        "estimatedTokensKept": kept,
        "compat": prep.compat,
    }


def summary_texts(prep: CompactionPreparation, as_json: bool) -> tuple[Any, Any, int]:
    """Pi's conversation and turn-prefix texts (`conversation_text`, `turn_prefix_text`, or their
    `_json` forms) and `estimatedTokensSummarized`, each message serialized and estimated in one
    pass, the estimates kept by the session's cache or else the request's memo (the context's
    figure adds them up again): on a long uncompacted path, tens of thousands of messages."""
    cache, estimates = prep.text_cache, prep.estimates
    if as_json:
        conversation_json, tokens = serialize_sourced_json_counted(prep.summarized, cache, escape_wrapped, estimates)
        conversation: Any = conversation_json
    else:
        conversation, tokens = serialize_sourced_counted(prep.summarized, cache, escape_wrapped, estimates)
    if not prep.is_split_turn:  # no turn-prefix text (and, from `prepare_compaction`, no messages)
        return conversation, None, tokens + _estimate_pairs(prep.turn_prefix, cache, estimates)
    if as_json:
        prefix_json, prefix_tokens = serialize_sourced_json_counted(prep.turn_prefix, cache, escape_wrapped, estimates)
        turn_prefix: Any = prefix_json
    else:
        turn_prefix, prefix_tokens = serialize_sourced_counted(prep.turn_prefix, cache, escape_wrapped, estimates)
    return conversation, turn_prefix, tokens + prefix_tokens


def _estimate_pairs(items: Sequence[tuple[str, dict[str, Any]]], cache: SerializedTextCache | None = None,
                    estimates: MessageEstimates | None = None) -> int:
    """The chars/4 estimates of `items` added up; through the caller's per-entry cache when given,
    else through the request's memo when given."""
    if cache is not None:
        return sum(cache.estimate(entry_id, message) for entry_id, message in items)
    if estimates is not None:
        return sum(estimates.of(message) for _, message in items)
    return sum(estimate_tokens(message) for _, message in items)


def prepare_report(
    session: SessionLike,
    leaf_id: str | None = None,
    keep_recent_tokens: int | None = None,
    reserve_tokens: int | None = None,
    text_cache: SerializedTextCache | None = None,
    include_text: bool = True,
    text_as_json: bool = False,
    compat: str = "pi",
) -> dict[str, Any] | None:
    """`compactd prepare --json` / `session/prepareCompaction`: None when nothing would be compacted.
    `text_cache` (the daemon's, per session) saves serializing the same history again;
    `include_text=False` leaves the two texts out (null); `text_as_json` gives them encoded, in
    parts (`preparation_json`). `compat` "omp": oh-my-pi's preparation (D-29), on the whole path
    (it reads the latest usage wherever it is)."""
    if leaf_id is not None and leaf_id not in session.by_id:
        raise EntryNotFoundError(leaf_id)
    leaf_key = leaf_id if leaf_id is not None else session.leaf_id
    leaf = session.by_id.get(leaf_key) if leaf_key is not None else None
    if leaf is not None and leaf.get("type") == "compaction":
        return None  # the path ends with a compaction, nothing to walk
    settings = _compaction_settings(keep_recent_tokens, reserve_tokens)
    # Preparation never looks before the previous compaction's first kept entry: the recent tail
    # gives the same answer as the whole path (indexes differ, but the JSON carries only ids).
    # Tens of thousands of short-lived containers per long path, none cyclic: without the pause
    # they trigger full collector passes over the whole session (most of the time on 20k entries).
    with gc_paused(len(session.by_id)):
        prep, path = _prepared(session, leaf_key, settings, compat, text_cache)
        report = None
        if isinstance(prep, CompactionPreparation) and leaf_key is not None:
            # The texts first: they estimate the summarized messages on the way, which the
            # context's estimate (from the path the preparation walked) then finds made.
            texts = summary_texts(prep, text_as_json) if include_text and prep.compat == "pi" else None
            context_tokens = path_context_tokens(path, leaf_key, text_cache, prep.estimates)
            report = preparation_json(prep, context_tokens=context_tokens, include_text=include_text,
                                      text_as_json=text_as_json, texts=texts)
            del texts
        # Freed before the collector is back: it runs as soon as it is (the allocations made
        # during the pause are over its threshold) and would walk every object still alive.
        del prep, path
    return report


def branch_report(
    session: SessionLike, from_id: str, to_id: str, budget: int | None = None, compat: str = "pi"
) -> dict[str, Any]:
    """`compactd branch --json`: what leaving `from_id` for `to_id` would summarize.

    `budget` defaults to B-9 with the default window and reserve. An explicit 0 means no limit,
    as Pi's `prepareBranchEntries(entries, 0)` (the D-13 clamp is only for a budget computed from
    settings); a negative budget is refused."""
    for entry_id in (from_id, to_id):
        if entry_id not in session.by_id:
            raise EntryNotFoundError(entry_id)
    if budget is None:
        budget = branch_token_budget(DEFAULT_CONTEXT_WINDOW, DEFAULT_RESERVE_TOKENS)
    elif budget < 0:
        raise ValueError(f"budget must be 0 (no limit) or positive, not {budget}")
    collection = collect_entries_for_branch_summary(session.by_id, from_id, to_id)
    if compat == "omp":  # D-29: oh-my-pi keeps tool results and counts with its own tokenizer
        from .omp import prepare_branch_entries_omp

        prep = prepare_branch_entries_omp(collection.entries, budget)
    else:
        prep = prepare_branch_entries(collection.entries, budget)
    read_files, modified_files = prep.file_lists
    return {
        "commonAncestorId": collection.common_ancestor_id,
        "entryIds": collection.entry_ids,
        "messages": _sourced_json(prep.messages),
        "totalTokens": prep.total_tokens,
        "readFiles": read_files,
        "modifiedFiles": modified_files,
        "compat": compat,
    }


def context_totals(
    session: SessionLike,
    leaf_id: str | None = None,
    model: str | None = None,
    cache: ExactTokenCache | None = None,
    totals: TotalsCache | None = None,
) -> ContextTotals:
    """The running totals behind `stats_report` (see `context_totals`): with a `totals` cache, one
    entry's work after an append whatever the length of the path."""
    if leaf_id is not None and leaf_id not in session.by_id:
        raise EntryNotFoundError(leaf_id)
    leaf = leaf_id if leaf_id is not None else session.leaf_id
    return totals_at(session.by_id, leaf, lambda: recent_path_for(session, leaf_id), model, cache, totals,
                     estimate=lambda messages, ids: _message_estimates(messages, ids, cache))


def stats_report(
    session: SessionLike,
    leaf_id: str | None = None,
    context_window: int | None = None,
    reserve_tokens: int | None = None,
    model: str | None = None,
    per_entry: bool = False,
    cache: ExactTokenCache | None = None,
    totals: TotalsCache | None = None,
    compat: str = "pi",
) -> dict[str, Any]:
    """`compactd stats --json` / `session/tokenStats`. `compat` is reported as given (D-29: which
    program's semantics the session's compactions follow).

    `contextTokens` etc. are K-7 over the context messages; `estimatedTokens` is the plain chars/4
    sum over them; `exactTokens` the tiktoken count (encoding from `model`, else the context's
    model). `perEntry` lists every `message` entry of the file in file order. `totals` (kept by
    the caller, cleared when entries change in place) makes the answer after an append cost one
    entry."""
    t = context_totals(session, leaf_id, model, cache, totals)
    window = DEFAULT_CONTEXT_WINDOW if context_window is None else context_window
    reserve = DEFAULT_RESERVE_TOKENS if reserve_tokens is None else reserve_tokens
    settings = CompactionSettings(reserve_tokens=reserve)
    if t.stale:
        # M-37: usage from before the latest compaction describes a context that no longer
        # exists; until the next answer the estimate of the current messages is the best figure.
        tokens: int | float = t.estimated
        usage_tokens: int | float = 0
        trailing, last_usage = t.estimated, None
    else:
        tokens, usage_tokens, trailing, last_usage = t.usage_tokens + t.trailing, t.usage_tokens, t.trailing, t.usage_index
    report: dict[str, Any] = {
        "contextTokens": tokens,
        "usageTokens": usage_tokens,
        "trailingTokens": trailing,
        "lastUsageIndex": last_usage,
        "estimatedTokens": t.estimated,
        "exactTokens": t.exact,
        "encoding": t.encoding,
        "exact": t.encoding_exact,
        "contextWindow": window,
        "reserveTokens": reserve,
        "threshold": window - reserve,
        "shouldCompact": should_compact(tokens, window, settings),
        "percent": round(tokens / window * 100, 1) if window > 0 else None,
        "usageStale": t.stale,
        "compat": compat,
    }
    if per_entry:
        counter = counter_for(model, t.model)
        rows: list[dict[str, Any]] = []
        for entry in session.entries:
            if entry.get("type") != "message":
                continue
            messages = project_entry(entry)
            rows.append(
                {
                    "entryId": entry["id"],
                    "estimate": sum(estimate_tokens(m) for m in messages),
                    "exact": count_entry_messages(entry["id"], messages, counter, cache),
                }
            )
        report["perEntry"] = rows
    return report


def _message_estimates(
    messages: Sequence[dict[str, Any]], entry_ids: Sequence[str], cache: ExactTokenCache | None
) -> list[int]:
    """chars/4 per context message, served from the cache for messages of unchanged entries."""
    if cache is None:
        return [estimate_tokens(m) for m in messages]
    out: list[int] = []
    previous: str | None = None
    position = 0
    for message, entry_id in zip(messages, entry_ids):
        position = position + 1 if entry_id == previous else 0
        previous = entry_id
        key = (entry_id, position, message.get("role"))
        stamp = message.get("prunedAt")
        value = cache.get_estimate(key, stamp)
        if value is None:
            value = estimate_tokens(message)
            cache.put_estimate(key, stamp, value)
        out.append(value)
    return out


def prune_report(
    session: SessionLike, leaf_id: str | None = None, settings: PruneSettings = DEFAULT_PRUNE_SETTINGS
) -> dict[str, Any]:
    """`compactd prune --dry-run --json`: what pruning the current path would do."""
    return plan_prune(path_for(session, leaf_id), settings).to_json()


def summary_figures(session: SessionLike, report: dict[str, Any]) -> dict[str, Any]:
    """Add what a side panel labels summary nodes with to a `tree_report` (in place):
    compaction nodes get `tokensBefore` (as stored) and `tokensAfter` (the chars/4 estimate of
    the context right after it: summary plus kept messages); branch-summary nodes get
    `summarizedEntries` (how many entries the branch it summarizes had, from `fromId` back to
    where it left the path of the summary)."""
    by_id = session.by_id
    for node in report["nodes"]:
        kind = node.get("type")
        if kind == "compaction":
            node.update(compaction_figures(by_id, by_id[node["id"]]))
        elif kind == "branch_summary":
            node["summarizedEntries"] = summarized_entries(by_id, by_id[node["id"]])
    return report
