"""The recent tail of a path (`session.context.recent_path`) must give exactly what the whole
path gives for the context, its model and thinking level and compaction preparation, and
`stats_report` with warm per-entry caches exactly what a cold one gives (M-37 fields included)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from compactd.compaction.exact_tokens import ExactTokenCache
from compactd.compaction.prepare import prepare_compaction
from compactd.compaction.reports import preparation_json, stats_report
from compactd.compaction.settings import CompactionSettings
from compactd.compaction.tokens import estimate_tokens
from compactd.session.context import context_from_path, recent_path
from compactd.session.tree import path_to
from hypothesis import given, settings
from hypothesis import strategies as st

from .builders import Builder, random_session, usage

SMALL_KEEP = CompactionSettings(keep_recent_tokens=50)


def _ctx_tuple(path: list[dict[str, Any]]) -> tuple[Any, ...]:
    ctx = context_from_path(path, path[-1]["id"] if path else None)
    return ctx.messages, ctx.entry_ids, ctx.thinking_level, ctx.model


def _prep(path: list[dict[str, Any]]) -> Any:
    prep = prepare_compaction(path, SMALL_KEEP)
    return preparation_json(prep, context_tokens=0) if prep else prep.reason


@settings(max_examples=150, deadline=None)
@given(random_session(), st.data())
def test_recent_path_matches_whole_path(b: Builder, data: st.DataObject) -> None:
    full_path = b.path()
    leaf = data.draw(st.sampled_from([e["id"] for e in full_path]))
    by_id = b.by_id
    whole = path_to(by_id, leaf)
    tail = recent_path(by_id, leaf)
    assert whole[len(whole) - len(tail):] == tail  # a suffix of the path
    assert _ctx_tuple(tail) == _ctx_tuple(whole)
    assert _prep(tail) == _prep(whole)


def _long_session() -> tuple[Builder, str]:
    b = Builder()
    b.thinking("low")
    b.model_change("anthropic", "claude-sonnet-4-5")
    for i in range(40):
        b.user(f"old question {i} " * 20)
        b.assistant(f"old answer {i} " * 20, usage_=usage(1000 + i))
    kept = b.user("kept question " * 20)
    b.assistant("kept answer " * 20, usage_=usage(5000))
    b.compaction(kept, summary="what happened before")
    b.user("after the compaction " * 5)
    return b, kept


def test_recent_path_stops_at_the_first_kept_entry_and_still_sees_old_settings() -> None:
    b, kept = _long_session()
    tail = recent_path(b.by_id, b.leaf)
    whole = b.path()
    # thinking level and model were set at the very start: the walk must go back for them
    assert tail == whole
    ctx = context_from_path(tail)
    assert ctx.thinking_level == "low"
    # once both are also set after the compaction, the tail begins at the first kept entry
    b.thinking("high")
    b.model_change("openai", "gpt-4o")
    tail = recent_path(b.by_id, b.leaf)
    assert tail[0]["id"] == kept and len(tail) < len(b.path()) // 10
    assert _ctx_tuple(tail) == _ctx_tuple(b.path())
    assert _prep(tail) == _prep(b.path())


def _session(b: Builder) -> Any:
    return SimpleNamespace(entries=b.entries, by_id=b.by_id, leaf_id=b.leaf)


def test_usage_stale_after_a_compaction_until_the_next_answer() -> None:
    b, _ = _long_session()
    report = stats_report(_session(b), context_window=10_000)
    # the kept assistant's usage (5000) predates the compaction: M-37 says it is stale
    assert report["usageStale"] is True
    assert report["contextTokens"] == report["estimatedTokens"] == report["trailingTokens"]
    assert report["usageTokens"] == 0 and report["lastUsageIndex"] is None
    assert report["percent"] == round(report["contextTokens"] / 10_000 * 100, 1)
    b.assistant("fresh answer", usage_=usage(7000))
    fresh = stats_report(_session(b), context_window=10_000)
    assert fresh["usageStale"] is False
    assert fresh["usageTokens"] == 7000 and fresh["contextTokens"] == 7000
    assert fresh["percent"] == 70.0


def test_no_compaction_means_usage_is_not_stale() -> None:
    b = Builder()
    b.user("q")
    b.assistant("a", usage_=usage(3000))
    report = stats_report(_session(b), context_window=0)
    assert report["usageStale"] is False and report["contextTokens"] == 3000
    assert report["percent"] is None  # no window, no percentage


def test_warm_caches_give_the_cold_answer_after_appends() -> None:
    b, _ = _long_session()
    cache = ExactTokenCache()
    stats_report(_session(b), cache=cache)
    computed = cache.computed
    b.user("one more question " * 3)
    warm = stats_report(_session(b), cache=cache)
    assert warm == stats_report(_session(b), cache=ExactTokenCache())
    assert cache.computed == computed + 1  # only the appended entry was counted
    # a pruned tool result changes its stamp: both caches recount it
    b.assistant(None, calls=[{"type": "toolCall", "id": "c1", "name": "read", "arguments": {"path": "a"}}])
    result_id = b.tool_result("c1", "read", "x" * 400)
    stats_report(_session(b), cache=cache)
    entry = b.by_id[result_id]
    entry["message"] = {**entry["message"], "prunedAt": 1, "content": []}
    assert stats_report(_session(b), cache=cache) == stats_report(_session(b), cache=ExactTokenCache())
    assert stats_report(_session(b), cache=cache)["estimatedTokens"] < warm["estimatedTokens"] + 400 // 4
    assert estimate_tokens(entry["message"]) < 100
