"""Answers encoded to JSON where they are built.

A large answer (a dry run's thousands of message items and history text, a context of a long
path) is plain JSON data. Encoding it in the worker that built it, with the collector still
paused, means the containers die inside the pause and only one bytes object reaches the loop:
otherwise the collector's first pass after the pause scans every one of them (~0.3 ms per dry run
on a 1 MB session, most of the daemon's overhead over the work itself) and the loop thread spends
its own time encoding. The protocol writes an `EncodedAnswer` into the response unchanged.
A dry run's history text (megabytes on a long path) comes already encoded, per message
(`SerializedTextCache.json_text`) gathered into chunks of 256 KB (`serialize_sourced_json`): it is
sent as it is, never joined into one text or encoded again.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from compactd.compaction.serialize import EncodedJsonString
from compactd.session.gc_pause import gc_paused

__all__ = ["EncodedAnswer", "encode_answer", "encoded_quietly", "json_bytes"]


@dataclass(frozen=True, slots=True)
class EncodedAnswer:
    """A request's result, already JSON: `parts` joined (the writer sends them as they are)."""

    parts: Sequence[bytes]
    size: int

    @classmethod
    def whole(cls, body: bytes) -> EncodedAnswer:
        return cls((body,), len(body))

    @property
    def body(self) -> bytes:
        return self.parts[0] if len(self.parts) == 1 else b"".join(self.parts)


def encode_answer(value: Any) -> EncodedAnswer:
    """`value` as an EncodedAnswer (see `_json` for what orjson refuses). An object with
    `EncodedJsonString` members (a dry run's texts) is encoded member by member, those members'
    parts taken as they are."""
    if isinstance(value, dict) and any(isinstance(member, EncodedJsonString) for member in value.values()):
        return _encode_with_parts(value)
    return EncodedAnswer.whole(_json(value))


def _encode_with_parts(value: dict[str, Any]) -> EncodedAnswer:
    """The object's JSON, members in their order."""
    parts: list[bytes] = []
    separator = b"{"
    for key, member in value.items():
        parts.append(separator + _json(key) + b":")
        if isinstance(member, EncodedJsonString):
            parts.extend(member.parts)
        else:
            parts.append(_json(member))
        separator = b","
    parts.append(b"}" if parts else b"{}")
    return EncodedAnswer(parts, sum([len(part) for part in parts]))


def _json(value: Any) -> bytes:
    """orjson's encoding; what it refuses (a lone surrogate from a damaged file, an integer beyond
    64 bits) takes the json module's ASCII escapes, valid JSON whatever the string holds."""
    try:
        return orjson.dumps(value)
    except TypeError:
        return json.dumps(value).encode("ascii")


json_bytes = _json  # (for the other encoders of this package)


def encoded_quietly(build: Callable[[], Any]) -> EncodedAnswer:
    """`encode_answer(build())` with the collector paused throughout (run it in a worker)."""
    with gc_paused():
        value = build()
        answer = encode_answer(value)
        del value  # freed while the collector is still paused
    return answer
