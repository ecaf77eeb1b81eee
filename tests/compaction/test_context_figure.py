"""The context figure a dry run and a compaction node share (figures.estimated_context_tokens):
through the daemon's per-session estimate cache, and from the path a dry run prepared on through
its memo of estimates, it is the same number as computed afresh."""

from __future__ import annotations

from pathlib import Path

import pytest

from compactd.compaction.figures import context_estimate, estimated_context_tokens
from compactd.compaction.prepare import CompactionPreparation, prepare_compaction
from compactd.compaction.reports import preparation_json, prepare_path_for, prepare_report, prepared_with_context
from compactd.compaction.serialize import SerializedTextCache
from compactd.compaction.tokens import MessageEstimates, estimate_tokens
from compactd.session import Session
from compactd.session.context import context_from_path, recent_path
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


REAL_PI = Path(__file__).resolve().parents[1] / "fixtures" / "real-pi"


@pytest.mark.parametrize("name", ["pi-mono-root-compact.jsonl", "pi-mono-large-session.jsonl"])
def test_the_dry_run_figures_equal_the_fresh_ones_at_every_leaf(pi_fixture: Path, name: str) -> None:
    """The dry run takes its context figure from the path it prepared on, and every figure through
    its memo of estimates (or the daemon's cache): the same numbers as computed afresh."""
    for session in (Session.open(pi_fixture), Session.open(REAL_PI / name)):
        cache = SerializedTextCache()
        leaves = [e["id"] for e in session.entries if e.get("type") == "message"][::23]
        checked = 0
        for leaf in leaves + leaves[::-1]:
            fresh_context = context_estimate(context_from_path(path_to(session.by_id, leaf), leaf).messages)
            for report in (prepare_report(session, leaf), prepare_report(session, leaf, text_cache=cache)):
                if report is None:
                    continue
                checked += 1
                # On the whole path, every estimate afresh: the same answer, texts and ids included.
                prep = prepare_compaction(path_to(session.by_id, leaf))
                assert isinstance(prep, CompactionPreparation)
                prep.estimates = None
                assert report == preparation_json(prep, context_tokens=fresh_context)
                assert report["estimatedTokensBefore"] == fresh_context
                assert report["estimatedTokensSummarized"] == sum(
                    estimate_tokens(m) for _, m in [*prep.summarized, *prep.turn_prefix])
                assert report["estimatedTokensKept"] == sum(estimate_tokens(m) for _, m in prep.kept)
            prepared, context_tokens = prepared_with_context(session, leaf)
            assert context_tokens == (fresh_context if prepared else None)
        assert checked > 10


def test_the_memo_of_estimates_answers_per_message_object() -> None:
    """A remembered estimate is the fresh one, and only for the very message it was made for: an
    equal-looking but different message (a rewrite under the same id) is estimated afresh."""
    memo = MessageEstimates()
    short = {"role": "user", "content": [{"type": "text", "text": "x" * 40}]}
    assert memo.of(short) == estimate_tokens(short) == 10
    assert memo.of(short) == 10
    longer = {**short, "content": [{"type": "text", "text": "x" * 400}]}
    assert memo.of(longer) == estimate_tokens(longer) == 100
    assert memo.of(short) == 10


def test_a_dry_run_reads_back_to_the_first_kept_entry_only() -> None:
    """Its tail leaves out the model and thinking level: on a path with a compaction and no
    thinking-level change after it, it stops at the compaction's first kept entry, where the
    context's tail walks on to the root."""
    session = Session.open(REAL_PI / "pi-mono-root-compact.jsonl")
    compaction = next(e for e in session.entries if e["type"] == "compaction")
    tail = prepare_path_for(session)
    assert tail[0]["id"] == compaction["firstKeptEntryId"]
    whole = recent_path(session.by_id, session.leaf_id)
    assert len(tail) < len(whole) and whole[-len(tail):] == tail
