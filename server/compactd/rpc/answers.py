"""Answers encoded to JSON where they are built.

A large answer (a dry run's thousands of message items and history text, a context of a long
path) is plain JSON data. Encoding it in the worker that built it, with the collector still
paused, means the containers die inside the pause and only one bytes object reaches the loop:
otherwise the collector's first pass after the pause scans every one of them (~0.3 ms per dry run
on a 1 MB session, most of the daemon's overhead over the work itself) and the loop thread spends
its own time encoding. The protocol writes an `EncodedAnswer` into the response unchanged.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson

from compactd.session.store import gc_paused

__all__ = ["EncodedAnswer", "encode_answer", "encoded_quietly"]


@dataclass(frozen=True, slots=True)
class EncodedAnswer:
    """A request's result, already JSON."""

    body: bytes


def encode_answer(value: Any) -> Any:
    """`value` as an EncodedAnswer, or unchanged when orjson refuses it (a lone surrogate from
    a damaged file, an integer beyond 64 bits): pygls' own encoder then takes it."""
    try:
        return EncodedAnswer(orjson.dumps(value))
    except TypeError:
        return value


def encoded_quietly(build: Callable[[], Any]) -> Any:
    """`encode_answer(build())` with the collector paused throughout (run it in a worker)."""
    with gc_paused():
        value = build()
        answer = encode_answer(value)
        del value  # freed while the collector is still paused
    return answer

