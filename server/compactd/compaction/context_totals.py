"""Running token totals of a context (session/tokenStats), extended entry by entry.

The context at a leaf whose parent's totals are known is the parent's context plus what the new
entry projects (X-8), unless the entry is a compaction (which restarts the context). So after an
append the statistics cost one entry, however long the path: the K-7 figures (newest valid usage
plus the estimates after it), the plain chars/4 sum, the exact count, M-37's staleness and the
context's model all follow from the previous totals and the new entry.

The caller owns a `TotalsCache` per session and must `clear` it when entries change in place
(pruning rewrites tool results under the same leaf); appends and navigation never invalidate it.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from compactd.session.context import context_from_path, project_entry

from .exact_tokens import ExactTokenCache, TokenCounter, count_context_exact, count_entry_messages, get_counter
from .tokens import calculate_context_tokens, estimate_tokens, has_valid_usage

__all__ = [
    "ContextTotals",
    "TotalsCache",
    "compute_totals",
    "counter_for",
    "extend_totals",
    "next_model",
    "totals_at",
    "window_model_id",
]

Entry = dict[str, Any]

# Entries appended since the last statistics that are replayed rather than recounting the path.
MAX_EXTEND = 256


@dataclass(frozen=True)
class ContextTotals:
    leaf_id: str | None
    model: dict[str, Any] | None  # the context's model (SessionContext.model)
    window_model: str | None  # the model id the context window is looked up by
    encoding: str  # the exact counter's encoding (its name)
    encoding_exact: bool  # False when that encoding only approximates the model's
    messages: int  # number of context messages
    estimated: int  # chars/4 summed over the context
    exact: int  # tiktoken count of the context
    usage_tokens: int | float  # K-7: the newest valid usage (0 if none)
    usage_index: int | None  # its message index
    trailing: int  # estimates after it (all of them without usage)
    stale: bool  # M-37


def window_model_id(entry: Entry) -> str | None:
    """The model id an entry fixes for the context window: a model change's `modelId`, or the
    `model` of an assistant answer; None for any other entry."""
    if entry.get("type") == "model_change" and isinstance(entry.get("modelId"), str):
        return str(entry["modelId"])
    message = entry.get("message") if entry.get("type") == "message" else None
    if isinstance(message, dict) and message.get("role") == "assistant" and isinstance(message.get("model"), str):
        return str(message["model"])
    return None


def next_model(model: dict[str, Any] | None, entry: Entry) -> dict[str, Any] | None:
    """`SessionContext.model` after `entry` (the rule of `context_from_path`), without the path."""
    return context_from_path([entry]).model or model


def _usage_stale(path: Sequence[Entry]) -> bool:
    """M-37: the path has a compaction and no assistant message with valid usage after it."""
    for entry in reversed(path):
        entry_type = entry.get("type")
        if entry_type == "compaction":
            return True
        if entry_type == "message":
            message = entry.get("message")
            if isinstance(message, dict) and has_valid_usage(message):
                return False
    return False


def counter_for(model_override: str | None, model: dict[str, Any] | None) -> TokenCounter:
    """The exact counter: the requested model's encoding, else the context model's."""
    if model_override is None and model is not None:
        model_override = model.get("modelId")
    return get_counter(model_override)


def compute_totals(
    path: Sequence[Entry],
    leaf_id: str | None,
    model_override: str | None,
    cache: ExactTokenCache | None,
    estimate: Any = None,
) -> ContextTotals:
    """Totals from scratch over `path` (root-first, or the tail `recent_path` gives).
    `estimate(messages, entry_ids)` may serve per-message estimates from a cache."""
    ctx = context_from_path(list(path), leaf_id)
    counter = counter_for(model_override, ctx.model)
    if estimate is None:
        estimates: Sequence[int] = [estimate_tokens(m) for m in ctx.messages]
    else:
        estimates = estimate(ctx.messages, ctx.entry_ids)
    usage_tokens: int | float = 0
    usage_index: int | None = None
    trailing = sum(estimates)
    for index in range(len(ctx.messages) - 1, -1, -1):
        if has_valid_usage(ctx.messages[index]):
            usage_tokens = calculate_context_tokens(ctx.messages[index]["usage"])
            usage_index = index
            trailing = sum(estimates[index + 1 :])
            break
    window_model = next((m for m in map(window_model_id, reversed(path)) if m is not None), None)
    return ContextTotals(
        leaf_id=leaf_id,
        model=ctx.model,
        window_model=window_model,
        encoding=counter.name,
        encoding_exact=counter.exact,
        messages=len(ctx.messages),
        estimated=sum(estimates),
        exact=count_context_exact(ctx.messages, ctx.entry_ids, counter, cache),
        usage_tokens=usage_tokens,
        usage_index=usage_index,
        trailing=trailing,
        stale=_usage_stale(path),
    )


def extend_totals(
    totals: ContextTotals, entry: Entry, model_override: str | None, cache: ExactTokenCache | None
) -> ContextTotals | None:
    """The totals at `entry`, a child of `totals.leaf_id`; None when they cannot be extended (a
    compaction restarts the context; a different encoding needs every entry counted again)."""
    if entry.get("type") == "compaction":
        return None
    model = next_model(totals.model, entry)
    counter = counter_for(model_override, model)
    if counter.name != totals.encoding or counter.exact != totals.encoding_exact:
        return None
    messages = project_entry(entry)
    estimates = [estimate_tokens(m) for m in messages]
    usage_tokens, usage_index, trailing, stale = totals.usage_tokens, totals.usage_index, totals.trailing, totals.stale
    for offset, message in enumerate(messages):
        if has_valid_usage(message):
            usage_tokens = calculate_context_tokens(message["usage"])
            usage_index = totals.messages + offset
            trailing = 0
            stale = False
        else:
            trailing += estimates[offset]
    exact = count_entry_messages(entry["id"], messages, counter, cache) if messages else 0
    return replace(
        totals,
        leaf_id=entry["id"],
        model=model,
        window_model=window_model_id(entry) or totals.window_model,
        messages=totals.messages + len(messages),
        estimated=totals.estimated + sum(estimates),
        exact=totals.exact + exact,
        usage_tokens=usage_tokens,
        usage_index=usage_index,
        trailing=trailing,
        stale=stale,
    )


class TotalsCache:
    """Totals of the few most recent (leaf, requested model) pairs: what the next append extends."""

    def __init__(self, size: int = 8) -> None:
        self._size = size
        self._items: OrderedDict[tuple[str | None, str | None], ContextTotals] = OrderedDict()

    def get(self, leaf_id: str | None, model_override: str | None) -> ContextTotals | None:
        key = (leaf_id, model_override)
        hit = self._items.get(key)
        if hit is not None:
            self._items.move_to_end(key)
        return hit

    def put(self, totals: ContextTotals, model_override: str | None) -> None:
        key = (totals.leaf_id, model_override)
        self._items[key] = totals
        self._items.move_to_end(key)
        while len(self._items) > self._size:
            self._items.popitem(last=False)

    def clear(self) -> None:
        self._items.clear()

    def __len__(self) -> int:
        return len(self._items)


def totals_at(
    by_id: Any,
    leaf_id: str | None,
    recent_path: Any,
    model_override: str | None,
    cache: ExactTokenCache | None,
    totals_cache: TotalsCache | None,
    estimate: Any = None,
) -> ContextTotals:
    """The totals at `leaf_id`: cached, extended from the parent's, or computed over
    `recent_path()` (called only then)."""
    if totals_cache is not None:
        hit = totals_cache.get(leaf_id, model_override)
        if hit is not None:
            return hit
        # Back to the nearest ancestor with known totals (several entries may have been appended
        # since), then forward one entry at a time.
        chain: list[Entry] = []
        known: ContextTotals | None = None
        entry = by_id.get(leaf_id) if leaf_id is not None else None
        while entry is not None and known is None and len(chain) < MAX_EXTEND:
            chain.append(entry)
            parent_id = entry.get("parentId")
            known = totals_cache.get(parent_id, model_override) if parent_id is not None else None
            entry = by_id.get(parent_id) if parent_id is not None else None
        for entry in reversed(chain if known is not None else []):
            known = extend_totals(known, entry, model_override, cache) if known is not None else None
        if known is not None:
            totals_cache.put(known, model_override)
            return known
    totals = compute_totals(recent_path(), leaf_id, model_override, cache, estimate)
    if totals_cache is not None:
        totals_cache.put(totals, model_override)
    return totals
