"""The figures a tree labels summary nodes with: a compaction's tokens before and after, and how
many entries a branch summary covers. Each walks only what it measures (the kept entries, the two
branches), not the depth of the path, so a whole tree of a long session stays linear."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from compactd.session.context import context_from_path

from .serialize import SerializedTextCache
from .tokens import MessageEstimates, estimate_tokens

Entry = dict[str, Any]


def compaction_figures(by_id: Mapping[str, Entry], entry: Entry) -> dict[str, Any]:
    """`tokensBefore` as stored and `tokensAfter`, the chars/4 estimate of the context right after
    the compaction (its summary plus the kept messages); and the two figures a panel may put on
    either side of an arrow, of one kind (`contextBasis`): the writer's own `tokensBefore` and
    `tokensAfter` when it recorded both (oh-my-pi, QO-8), else the chars/4 estimates of the context
    just before and just after (Pi's `tokensBefore` is the provider's usage, which an estimate after
    cannot be compared with). `contextShrank` is false when the compaction did not make the context
    smaller; oh-my-pi's `method` and `warning` are passed on as recorded."""
    before = entry.get("tokensBefore")
    before = before if _is_number(before) else None
    ctx = context_from_path(kept_tail(by_id, entry), entry["id"])
    after = sum(estimate_tokens(m) for m in ctx.messages)
    figures: dict[str, Any] = {"tokensBefore": before, "tokensAfter": after}
    recorded_after = entry.get("tokensAfter")
    if before is not None and _is_number(recorded_after):
        figures.update(contextBasis="recorded", contextBefore=before, contextAfter=recorded_after)
    else:
        parent = entry.get("parentId")
        estimated_before = estimated_context_tokens(by_id, parent) if isinstance(parent, str) and parent in by_id else 0
        figures.update(contextBasis="estimate", contextBefore=estimated_before, contextAfter=after)
    figures["contextShrank"] = figures["contextAfter"] < figures["contextBefore"]
    for field, name in (("method", "compactionMethod"), ("warning", "compactionWarning")):
        value = entry.get(field)
        if isinstance(value, str) and value:
            figures[name] = value
    return figures


def estimated_context_tokens(by_id: Mapping[str, Entry], leaf_id: str,
                             cache: SerializedTextCache | None = None) -> int:
    """The chars/4 estimate of the context the model gets at `leaf_id`: every message of it, the
    system message, the latest compaction's summary and branch summaries included, context edits
    applied. The one figure both sides compare: a compaction node's `contextBefore` (at its parent)
    and the dry run's `estimatedTokensBefore` (at the leaf it would compact) are this. With the
    session's `cache`, a message estimated for an earlier leaf is not estimated again."""
    context = context_from_path(context_tail(by_id, leaf_id), leaf_id)
    if cache is None:
        return context_estimate(context.messages)
    return sum(cache.estimate(eid, m) for eid, m in zip(context.entry_ids, context.messages, strict=True))


def path_context_tokens(path: list[Entry], leaf_id: str, cache: SerializedTextCache | None = None,
                        estimates: MessageEstimates | None = None) -> int:
    """`estimated_context_tokens` of the leaf that ends `path`, given a root-first path to it that
    holds everything its context depends on (the whole path, or `session.context.recent_path`'s
    tail, which a dry run has walked already), through the session's `cache` or else the request's
    `estimates` (a dry run's memo: its summarized and kept messages are most of the context)."""
    context = context_from_path(path, leaf_id)
    if cache is not None:
        return sum(cache.estimate(eid, m) for eid, m in zip(context.entry_ids, context.messages, strict=True))
    if estimates is not None:
        return sum(map(estimates.of, context.messages))
    return context_estimate(context.messages)


def context_estimate(messages: Iterable[dict[str, Any]]) -> int:
    return sum(estimate_tokens(m) for m in messages)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def context_tail(by_id: Mapping[str, Entry], leaf_id: str) -> list[Entry]:
    """The end of the path to `leaf_id` that decides its context, root first: back to the latest
    compaction on it and that compaction's kept entries (`kept_tail`), or the whole path when there
    is none. Costs the context, not the depth of the session."""
    out: list[Entry] = []
    seen: set[str] = set()
    current = by_id.get(leaf_id)
    while current is not None and current["id"] not in seen:
        if current.get("type") == "compaction":
            out.reverse()
            return kept_tail(by_id, current) + out
        seen.add(current["id"])
        out.append(current)
        parent = current.get("parentId")
        current = by_id.get(parent) if isinstance(parent, str) else None
    out.reverse()
    return out


def kept_tail(by_id: Mapping[str, Entry], compaction: Entry) -> list[Entry]:
    """The path from the compaction's first kept entry to the compaction, root first: the context
    right after a compaction is its summary and the messages kept before it, so this tail gives the
    same messages as the whole path (context_entries drops everything before the first kept entry)
    while costing the kept entries, not the depth. Without that entry on the path: the whole path,
    as the full projection then keeps nothing either."""
    first_kept = compaction.get("firstKeptEntryId")
    tail = [compaction]
    if first_kept is None or first_kept == compaction["id"]:
        return tail
    seen = {compaction["id"]}
    parent = compaction.get("parentId")
    current = by_id.get(parent) if isinstance(parent, str) else None
    while current is not None and current["id"] not in seen:  # a parentId cycle ends the path
        seen.add(current["id"])
        tail.append(current)
        if current["id"] == first_kept:
            break
        parent = current.get("parentId")
        current = by_id.get(parent) if isinstance(parent, str) else None
    tail.reverse()
    return tail


def summarized_entries(by_id: Mapping[str, Entry], summary: Entry) -> int | None:
    """Entries from the summary's `fromId` back to where that branch leaves the summary's own
    path; None when `fromId` is not in the file (a fork keeps only the path, not the branch left). Both chains are walked in turn until one reaches an entry the other has seen: the first
    such entry is their common ancestor, so this costs the two branches' lengths, not the depth."""
    start = summary.get("fromId")
    a = by_id.get(start) if isinstance(start, str) else None
    if a is None:
        return None
    b: Entry | None = summary
    seen_a: dict[str, int] = {}
    seen_b: set[str] = set()
    while a is not None or b is not None:
        if a is not None:
            aid = a["id"]
            if aid in seen_b:
                return len(seen_a)
            if aid in seen_a:  # a parentId cycle
                a = None
            else:
                seen_a[aid] = len(seen_a)
                parent = a.get("parentId")
                a = by_id.get(parent) if isinstance(parent, str) else None
        if b is not None:
            bid = b["id"]
            if bid in seen_a:
                return seen_a[bid]
            if bid in seen_b:
                b = None
            else:
                seen_b.add(bid)
                parent = b.get("parentId")
                b = by_id.get(parent) if isinstance(parent, str) else None
    return len(seen_a)
