"""§13.1 pruning plan: N-1..N-5, N-8 and edge cases 68–72 (pure parts), D-19 defaults."""

from __future__ import annotations

from compactd.compaction.prune import (
    PruneSettings,
    context_tokens_after_prune,
    plan_prune,
    pruned_content,
    pruned_notice,
)
from compactd.compaction.tokens import estimate_tokens

from .builders import Builder, text_block, usage


def _results(b: Builder, sizes: list[int], name: str = "bash") -> list[str]:
    ids = []
    for i, size in enumerate(sizes):
        b.assistant(None)
        ids.append(b.tool_result(f"c{i}", name, "x" * (size * 4)))
    return ids


def test_defaults() -> None:  # N-1, D-19
    s = PruneSettings()
    assert (s.protect_tokens, s.minimum_savings, s.protected_tools) == (40000, 20000, ("skill", "read"))


def test_protection_window_and_crossing_result_is_protected() -> None:  # N-3, edge 68
    b = Builder()
    old, crossing, recent = _results(b, [1000, 1000, 500])
    plan = plan_prune(b.path(), PruneSettings(protect_tokens=1000, minimum_savings=0))
    # newest (500) → acc 500 < 1000 protected; crossing (1000): acc 500 < 1000 → protected; old: acc 1500
    assert plan.entry_ids == [old]
    assert crossing not in plan.entry_ids and recent not in plan.entry_ids


def test_protected_tools_and_already_pruned_results() -> None:  # N-3, edge 69
    b = Builder()
    read_id = _results(b, [800], name="read")[0]
    skill_id = _results(b, [800], name="skill")[0]
    pruned = _results(b, [800])[0]
    b.by_id[pruned]["message"]["prunedAt"] = 1_700_000_000_000
    b.by_id[pruned]["message"]["content"] = [text_block(pruned_notice(800))]
    plain = _results(b, [800])[0]
    protect = _results(b, [10])[0]
    plan = plan_prune(b.path(), PruneSettings(protect_tokens=5, minimum_savings=0))
    assert plan.entry_ids == [plain]
    assert not {read_id, skill_id, pruned, protect} & set(plan.entry_ids)


def test_already_pruned_results_count_toward_the_window() -> None:  # N-3, edge 69
    b = Builder()
    victim = _results(b, [800])[0]
    pruned = _results(b, [800])[0]
    b.by_id[pruned]["message"]["prunedAt"] = 1
    tokens_of_pruned = estimate_tokens(b.by_id[pruned]["message"])
    plan = plan_prune(b.path(), PruneSettings(protect_tokens=tokens_of_pruned, minimum_savings=0))
    assert plan.entry_ids == [victim]
    plan = plan_prune(b.path(), PruneSettings(protect_tokens=tokens_of_pruned + 1, minimum_savings=0))
    assert plan.entry_ids == []


def test_savings_minimum_is_inclusive() -> None:  # N-4, N-5, edge 70
    b = Builder()
    _results(b, [1000, 10])
    exact = 1000 - (len(pruned_notice(1000)) + 3) // 4  # notice "[Output truncated - 1000 tokens]" = 8 tokens
    at = plan_prune(b.path(), PruneSettings(protect_tokens=1, minimum_savings=exact))
    assert (at.pruned_count, at.tokens_saved) == (1, exact)
    below = plan_prune(b.path(), PruneSettings(protect_tokens=1, minimum_savings=exact + 1))
    assert (below.pruned_count, below.tokens_saved, below.entry_ids) == (0, 0, [])


def test_notice_and_replacement_content() -> None:  # N-5, edge 71
    b = Builder()
    old = _results(b, [3000, 10])[0]
    plan = plan_prune(b.path(), PruneSettings(protect_tokens=1, minimum_savings=0))
    assert plan.replacements() == {old: [{"type": "text", "text": "[Output truncated - 3000 tokens]"}]}
    assert pruned_content(7) == [{"type": "text", "text": "[Output truncated - 7 tokens]"}]
    assert plan.to_json() == {"prunedCount": 1, "tokensSaved": 3000 - 8, "entryIds": [old]}


def test_whole_path_is_considered_including_before_a_compaction() -> None:  # N-2
    b = Builder()
    first = _results(b, [2000])[0]
    b.compaction(first)
    _results(b, [10])
    plan = plan_prune(b.path(), PruneSettings(protect_tokens=1, minimum_savings=0))
    assert plan.entry_ids == [first]


def test_threshold_after_prune_subtracts_savings() -> None:  # N-8, edge 72
    assert context_tokens_after_prune(usage(50000), 20000) == 30000
    assert context_tokens_after_prune(usage(1000), 5000) == 0
