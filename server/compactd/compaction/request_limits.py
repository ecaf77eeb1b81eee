"""Output-token limits of summarization requests (spec S-6, B-12)."""

from __future__ import annotations

import math

__all__ = ["BRANCH_SUMMARY_MAX_TOKENS", "summary_max_tokens", "short_summary_max_tokens"]

BRANCH_SUMMARY_MAX_TOKENS = 2048  # B-12: fixed


def summary_max_tokens(reserve_tokens: int, model_max_tokens: int | None = None, *, turn_prefix: bool = False) -> int:
    """S-6 [PI-NEW]: `floor(0.8 × reserve)` for the history summary, `floor(0.5 × reserve)` for a
    turn prefix, capped by the model's own output limit when that is positive."""
    budget = math.floor((0.5 if turn_prefix else 0.8) * reserve_tokens)
    if model_max_tokens is not None and model_max_tokens > 0:
        return min(budget, model_max_tokens)
    return budget


def short_summary_max_tokens(reserve_tokens: int) -> int:
    """S-6 [OMP]: the short summary gets `min(512, floor(0.2 × reserve))`."""
    return min(512, math.floor(0.2 * reserve_tokens))
