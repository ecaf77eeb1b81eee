"""Running token totals (session/tokenStats after an append): extending the parent's totals by one
entry gives exactly the cold answer, and does not walk the path."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from compactd.compaction.context_totals import TotalsCache, totals_at
from compactd.compaction.exact_tokens import ExactTokenCache
from compactd.compaction.reports import stats_report
from hypothesis import given, settings

from .builders import Builder, random_session, tool_call, usage


def _at(b: Builder, leaf: str | None) -> Any:
    return SimpleNamespace(entries=b.entries, by_id=b.by_id, leaf_id=leaf)


def _walk_every_leaf(b: Builder, model: str | None = None) -> int:
    """stats at each entry in append order, with running totals, against a cold computation."""
    totals, cache = TotalsCache(), ExactTokenCache()
    for entry in b.entries:
        session = _at(b, entry["id"])
        warm = stats_report(session, model=model, cache=cache, totals=totals)
        assert warm == stats_report(session, model=model), entry
    return len(b.entries)


@settings(max_examples=80, deadline=None)
@given(random_session())
def test_running_totals_equal_the_cold_answer_at_every_leaf(b: Builder) -> None:
    assert _walk_every_leaf(b) == len(b.entries)


def _working_session() -> Builder:
    b = Builder()
    b.thinking("low")
    b.model_change("anthropic", "claude-sonnet-4-5")
    for i in range(12):
        b.user(f"question {i} " * 10)
        b.assistant(None, calls=[tool_call(f"c{i}", "read", {"path": f"f{i}.py"})], usage_=usage(800 + i))
        b.tool_result(f"c{i}", "read", "x" * (100 * i))
        b.assistant(f"answer {i} " * 10, usage_=usage(1200 + 10 * i))
    return b


@pytest.mark.parametrize("model", [None, "gpt-4"])
def test_usage_compaction_model_changes_and_branches_keep_the_cold_answer(model: str | None) -> None:
    b = _working_session()
    kept = b.entries[-8]["id"]
    b.compaction(kept, summary="so far")  # restarts the context: usage stale until the next answer
    b.user("after the compaction " * 4)
    b.assistant("failed", usage_=usage(5000), stop="error")
    b.assistant("fine", usage_=usage(4000))
    b.model_change("openai", "gpt-4o")  # a different encoding for the exact count
    b.user("with another model")
    b.branch_from(b.entries[5]["id"])  # navigation: a new child of an old entry
    b.user("on a branch")
    b.label(b.leaf or "", "mark")
    b.custom_message("extension note")
    b.branch_summary("explored something")
    assert _walk_every_leaf(b, model) == len(b.entries)


def test_after_an_append_only_the_new_entry_is_counted_and_the_path_is_not_walked() -> None:
    b = _working_session()
    totals, cache = TotalsCache(), ExactTokenCache()
    stats_report(_at(b, b.leaf), cache=cache, totals=totals)
    computed = cache.computed
    b.user("one more question")
    b.thinking("high")
    b.assistant("and its answer")  # three entries appended since the last statistics
    session = _at(b, b.leaf)

    def no_walk() -> list[dict[str, Any]]:
        raise AssertionError("the path was walked")

    extended = totals_at(session.by_id, b.leaf, no_walk, None, cache, totals)
    assert cache.computed == computed + 2  # the two messages; the thinking change has none
    assert stats_report(session, cache=cache, totals=totals) == stats_report(session)
    assert extended.leaf_id == b.leaf


def test_clearing_after_a_prune_gives_the_new_answer() -> None:
    b = _working_session()
    totals, cache = TotalsCache(), ExactTokenCache()
    before = stats_report(_at(b, b.leaf), cache=cache, totals=totals)
    result = [e for e in b.entries if e.get("message", {}).get("role") == "toolResult"][-1]  # 1,100 chars
    result["message"] = {**result["message"], "content": [], "prunedAt": 1}  # what pruning does
    totals.clear()  # the daemon does this when it announces a rewrite
    after = stats_report(_at(b, b.leaf), cache=cache, totals=totals)
    assert after == stats_report(_at(b, b.leaf))
    assert after["estimatedTokens"] < before["estimatedTokens"]
