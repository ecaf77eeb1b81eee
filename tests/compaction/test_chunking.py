"""The chunking plan for histories larger than the summarizer's window (pure)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from compactd.compaction.chunking import (
    MIN_CHUNK_TOKENS,
    ChunkingError,
    chunk_budget,
    fit_request,
    output_room,
    plan_chunks,
)


def test_fit_caps_the_output_budget_to_the_room_left() -> None:
    # usable = 9000 of 10000; a 5000-token prompt leaves 4000 for the answer
    fit = fit_request(5000, 13107, 10000)
    assert fit.fits and fit.max_tokens == 4000
    roomy = fit_request(1000, 2000, 10000)
    assert roomy.fits and roomy.max_tokens == 2000  # never raised above the request's budget


def test_prompt_leaving_less_than_a_quarter_of_the_window_does_not_fit() -> None:
    assert output_room(8000, 13107) == 2000
    assert fit_request(7000, 13107, 8000).fits is False  # 7200 usable - 7000 < 2000
    assert fit_request(5200, 13107, 8000).fits is True  # exactly 2000 left


def test_chunk_budget_keeps_room_for_summary_and_answer() -> None:
    # usable 3686 - fixed 600 - summary max(300, 1024) - answer 1024
    assert chunk_budget(4096, 600, 300, 13107) == 3686 - 600 - 1024 - 1024
    # a previous summary longer than the answer room is planned at its own size
    assert chunk_budget(4096, 600, 1500, 13107) == 3686 - 600 - 1500 - 1024


def test_too_small_a_window_is_a_clear_error() -> None:
    with pytest.raises(ChunkingError) as info:
        chunk_budget(2048, 900, 0, 13107)
    text = str(info.value)
    assert "2048 tokens" in text and f"fewer than {MIN_CHUNK_TOKENS}" in text


def test_messages_are_grouped_oldest_first_within_the_budget() -> None:
    texts = [f"m{i}" for i in range(6)]
    chunks = plan_chunks(texts, [40, 40, 40, 40, 40, 40], 100)
    assert [(c.start, c.end) for c in chunks] == [(0, 2), (2, 4), (4, 6)]
    assert chunks[0].text == "m0\n\nm1" and all(c.part == 0 for c in chunks)


def test_empty_messages_never_start_a_chunk_and_cost_nothing() -> None:
    chunks = plan_chunks(["", "a", "", "b", ""], [0, 50, 0, 50, 0], 101)
    assert [(c.start, c.end, c.text) for c in chunks] == [(1, 5, "a\n\nb")]


def test_a_message_larger_than_the_budget_is_cut_into_slices() -> None:
    long_text = "\n".join(f"line {i} of the long tool output" for i in range(200))
    chunks = plan_chunks(["before", long_text, "after"], [10, 2000, 10], 300)
    assert chunks[0].text == "before" and chunks[-1].text == "after"
    middle = chunks[1:-1]
    assert len(middle) >= 7 and all((c.start, c.end) == (1, 2) for c in middle)
    assert [c.part for c in middle] == list(range(1, len(middle) + 1))
    assert "".join(c.text for c in middle) == long_text  # nothing lost, nothing repeated
    assert all(c.text.endswith("\n") for c in middle[:-1])  # cut at line ends


@given(st.lists(st.integers(min_value=0, max_value=400), min_size=1, max_size=60), st.integers(min_value=50, max_value=500))
def test_plan_covers_every_message_once_in_order(costs: list[int], budget: int) -> None:
    texts = ["" if c == 0 else f"<{i}>" + "x" * c for i, c in enumerate(costs)]
    chunks = plan_chunks(texts, costs, budget)
    seen = "".join(c.text.replace("\n\n", "") for c in chunks)
    assert seen == "".join(t for t in texts)
    for chunk in chunks:
        if chunk.part == 0:
            inside = [costs[i] for i in range(chunk.start, chunk.end) if texts[i]]
            assert sum(inside) + len(inside) - 1 <= budget
    starts = [c.start for c in chunks]
    assert starts == sorted(starts)
