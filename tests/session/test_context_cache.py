"""session/context reports extended entry by entry equal the report built from the whole path,
at every leaf, and the path is not walked when the parent's report is known."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from compactd.session.context_cache import ContextReportCache
from compactd.session.views import context_report
from hypothesis import given, settings

from tests.compaction.builders import Builder, random_session


def _cold(b: Builder, leaf: str) -> dict[str, Any]:
    return context_report(SimpleNamespace(entries=b.entries, by_id=b.by_id, leaf_id=leaf))  # type: ignore[arg-type]


@settings(max_examples=80, deadline=None)
@given(random_session())
def test_extended_reports_equal_cold_reports_at_every_leaf(b: Builder) -> None:
    cache = ContextReportCache()
    by_id = b.by_id
    for entry in b.entries:
        leaf = entry["id"]
        assert cache.report(by_id, leaf, lambda leaf=leaf: _cold(b, leaf)) == _cold(b, leaf)


def test_after_an_append_only_the_new_entry_is_projected() -> None:
    b = Builder()
    b.thinking("low")
    b.model_change("anthropic", "claude")
    for i in range(5):
        b.user(f"q{i}")
        b.assistant(f"a{i}")
    cache = ContextReportCache()
    first = cache.report(b.by_id, b.leaf or "", lambda: _cold(b, b.leaf or ""))
    b.thinking("high")
    b.user("one more")

    def no_walk() -> dict[str, Any]:
        raise AssertionError("the path was walked")

    assert cache.report(b.by_id, b.leaf or "", no_walk) == _cold(b, b.leaf or "")
    assert len(first["messages"]) == 10  # the earlier report is not modified
    # navigation to an entry whose parent's report is unknown builds it
    target = b.entries[3]["id"]
    assert cache.report(b.by_id, target, lambda: _cold(b, target)) == _cold(b, target)


def test_peek_answers_only_a_report_already_there() -> None:
    b = Builder()
    b.user("q")
    first = b.assistant("a")
    cache = ContextReportCache(size=1)
    assert cache.peek(first) is None  # nothing built yet: the caller builds off the loop
    report = cache.report(b.by_id, first, lambda: _cold(b, first))
    assert cache.peek(first) is report
    second = b.user("next")
    cache.report(b.by_id, second, lambda: _cold(b, second))  # size 1: the first is dropped
    assert cache.peek(first) is None and cache.peek(second) == _cold(b, second)
