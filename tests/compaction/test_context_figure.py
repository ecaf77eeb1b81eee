"""The context figure a dry run and a compaction node share (figures.estimated_context_tokens):
through the daemon's per-session estimate cache it is the same number as computed afresh."""

from __future__ import annotations

from pathlib import Path

from compactd.compaction.figures import context_estimate, estimated_context_tokens
from compactd.compaction.serialize import SerializedTextCache
from compactd.session import Session
from compactd.session.context import context_from_path
from compactd.session.tree import path_to


def test_the_cached_figure_equals_the_fresh_one_at_every_leaf(pi_fixture: Path) -> None:
    session = Session.open(pi_fixture)
    cache = SerializedTextCache()
    leaves = [e["id"] for e in session.entries if e.get("type") == "message"][::37]
    assert len(leaves) > 10
    for leaf in leaves + leaves[::-1]:  # forwards, then back over the same entries (cache hits)
        fresh = context_estimate(context_from_path(path_to(session.by_id, leaf), leaf).messages)
        assert estimated_context_tokens(session.by_id, leaf) == fresh
        assert estimated_context_tokens(session.by_id, leaf, cache) == fresh


def test_a_message_replaced_under_the_same_id_is_estimated_again(pi_fixture: Path) -> None:
    session = Session.open(pi_fixture)
    cache = SerializedTextCache()
    leaf = next(e["id"] for e in reversed(session.get_branch()) if e.get("message", {}).get("role") == "user")
    before = estimated_context_tokens(session.by_id, leaf, cache)
    # Another writer's rewrite: the same id, a new entry with a longer message.
    entry = session.by_id[leaf]
    by_id = dict(session.by_id)
    by_id[leaf] = {**entry, "message": {**entry["message"], "content": [{"type": "text", "text": "x" * 40_000}]}}
    after = estimated_context_tokens(by_id, leaf, cache)
    assert after == estimated_context_tokens(by_id, leaf) and after > before
