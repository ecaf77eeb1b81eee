"""Fitting a summarization prompt into the summarizer model's context window (pure).

When the history to summarize does not fit, it is summarized in chunks, oldest first: each chunk
is sent with the update prompt and the running summary as `<previous-summary>`, so the last
answer covers the whole history. This module only plans; the engine makes the calls.

Token counts come from the caller (tiktoken, an approximation of the server's own tokenizer), so
a share of the window (`TOKENIZER_MARGIN`) is kept free for the difference.

One request must hold: the fixed prompt text (system prompt, instructions, tags), the running
summary, the chunk of conversation and the answer. The answer gets `output_room` tokens (the
request's output budget, but at most a quarter of the window); the running summary is planned at
its largest, the previous summary's size or `output_room` (a summary of a chunk is at most that
long), so every planned chunk fits whatever the model writes.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = [
    "MIN_CHUNK_TOKENS",
    "TOKENIZER_MARGIN",
    "Chunk",
    "ChunkingError",
    "WindowFit",
    "chunk_budget",
    "fit_request",
    "output_room",
    "plan_chunks",
    "usable_window",
]

TOKENIZER_MARGIN = 0.1  # share of the window left for the server tokenizer counting differently
MIN_CHUNK_TOKENS = 256  # below this a chunk holds too little conversation to be worth a call
_JOIN = "\n\n"  # how serialized messages are joined (serialize_conversation, Z-5)


class ChunkingError(ValueError):
    """The window is too small for even one useful chunk."""


@dataclass(frozen=True)
class WindowFit:
    fits: bool
    max_tokens: int  # the output budget to request (capped to what the window leaves)


@dataclass(frozen=True)
class Chunk:
    start: int  # index of the first message of the chunk
    end: int  # one past the last message
    text: str  # serialized conversation of the chunk (a slice of one message when it was too long)
    part: int = 0  # > 0 when one message was cut into several chunks: its 1-based slice number


def usable_window(window: int) -> int:
    return math.floor(window * (1 - TOKENIZER_MARGIN))


def output_room(window: int, max_tokens: int) -> int:
    """Tokens kept for the answer: the request's budget, at most a quarter of the window."""
    return max(1, min(max_tokens, window // 4))


def fit_request(prompt_tokens: int, max_tokens: int, window: int) -> WindowFit:
    """Whether a prompt of `prompt_tokens` leaves room for an answer in `window`; when it does,
    the output budget is capped to the room left (servers such as vLLM reject prompt + max_tokens
    beyond the window)."""
    room = usable_window(window) - prompt_tokens
    need = output_room(window, max_tokens)
    return WindowFit(room >= need, max(need, min(max_tokens, room)))


def chunk_budget(window: int, fixed_tokens: int, summary_tokens: int, max_tokens: int) -> int:
    """Conversation tokens one chunk may hold (see the module docstring). Raises ChunkingError
    when that is below MIN_CHUNK_TOKENS."""
    out = output_room(window, max_tokens)
    budget = usable_window(window) - fixed_tokens - max(summary_tokens, out) - out
    if budget < MIN_CHUNK_TOKENS:
        raise ChunkingError(
            f"the summarizer's context window ({window} tokens) is too small to summarize in chunks: "
            f"the prompt text ({fixed_tokens} tokens), the running summary (up to {max(summary_tokens, out)}) "
            f"and the answer ({out}) leave {max(budget, 0)} tokens for conversation, fewer than {MIN_CHUNK_TOKENS}"
        )
    return budget


def _slices(text: str, tokens: int, budget: int) -> list[str]:
    """Cut one over-long message text into pieces of about `budget` tokens, at line ends when
    possible (characters per token taken from the message's own count)."""
    per_piece = max(1, math.floor(len(text) * budget / max(tokens, 1) * 0.9))
    pieces: list[str] = []
    rest = text
    while len(rest) > per_piece:
        cut = rest.rfind("\n", per_piece // 2, per_piece)
        cut = cut + 1 if cut > 0 else per_piece
        pieces.append(rest[:cut])
        rest = rest[cut:]
    if rest:
        pieces.append(rest)
    return pieces


def plan_chunks(texts: Sequence[str], tokens: Sequence[int], budget: int) -> list[Chunk]:
    """Group consecutive serialized messages (`texts[i]`, costing `tokens[i]`) into chunks of at
    most `budget` tokens, oldest first. Empty texts (messages with nothing to show) join their
    neighbours; a message larger than the budget alone is cut into slices, one chunk each."""
    if len(texts) != len(tokens):
        raise ValueError("texts and tokens must have the same length")
    if budget < 1:
        raise ValueError("budget must be positive")
    chunks: list[Chunk] = []
    start, parts, used = 0, [], 0

    def close(end: int) -> None:
        nonlocal start, parts, used
        if parts:
            chunks.append(Chunk(start, end, _JOIN.join(parts)))
        start, parts, used = end, [], 0

    for i, (text, cost) in enumerate(zip(texts, tokens)):
        if not text:
            continue
        if cost > budget:
            close(i)
            pieces = _slices(text, cost, budget)
            chunks.extend(Chunk(i, i + 1, piece, n) for n, piece in enumerate(pieces, 1))
            start = i + 1
            continue
        joiner = 1 if parts else 0  # the blank line between messages is about one token
        if parts and used + joiner + cost > budget:
            close(i)
            joiner = 0
        if not parts:
            start = i
        parts.append(text)
        used += joiner + cost
    close(len(texts))
    return chunks
