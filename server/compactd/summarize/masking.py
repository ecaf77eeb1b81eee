"""Masking an API key in everything that leaves the daemon (issue 26 §6).

A server may put the key into what it answers: an error page that quotes the request, a proxy
that echoes the Authorization header into the completion. The whole key and every piece of it of
`MIN_FRAGMENT` characters or more are replaced by `MASK` — in error texts (before any truncation,
which could cut the key in two and let a part through), in the streamed text (the key may be
split across chunks: the stream holds back just enough characters to decide), and in the final
summary that is written to the session file.
"""

from __future__ import annotations

import re

__all__ = ["KeyMask", "MASK", "MIN_FRAGMENT", "StreamMask"]

MASK = "***"
MIN_FRAGMENT = 8  # pieces this long are as good as the key to someone guessing the rest
_MIN_WHOLE = 4  # shorter keys are not keys (placeholders); not masked


class KeyMask:
    def __init__(self, key: str | None) -> None:
        self.key = key if key and len(key) >= _MIN_WHOLE else None
        self._pattern: re.Pattern[str] | None = None
        if self.key is not None:
            size = min(MIN_FRAGMENT, len(self.key))
            grams = {self.key[i:i + size] for i in range(len(self.key) - size + 1)}
            # Longest first: with several grams at one spot the regex takes the first listed.
            self._pattern = re.compile("|".join(map(re.escape, sorted(grams, key=len, reverse=True))))
            self._size = size

    def __bool__(self) -> bool:
        return self.key is not None

    def text(self, text: str) -> str:
        """`text` with the key and its pieces masked."""
        if self._pattern is None or not text:
            return text
        out, _ = self._mask(text, len(text))
        return out

    def stream(self) -> StreamMask:
        return StreamMask(self)

    def _mask(self, text: str, limit: int) -> tuple[str, int]:
        """Mask the pieces starting before `limit`; return the text up to where it is decided
        and that position (>= limit, or the end of the last piece masked)."""
        assert self._pattern is not None and self.key is not None
        key = self.key
        parts: list[str] = []
        pos = 0
        for found in self._pattern.finditer(text):
            start = found.start()
            if start >= limit:
                break
            if start < pos:  # inside the piece just masked
                continue
            end = found.end()
            # Grow the piece while it is still part of the key (a piece is at most the key).
            while end < len(text) and end - start < len(key) and text[start:end + 1] in key:
                end += 1
            parts.append(text[pos:start])
            parts.append(MASK)
            pos = end
        cut = max(pos, limit)
        parts.append(text[pos:cut])
        return "".join(parts), cut


class StreamMask:
    """Masks a text that arrives in pieces: `feed` returns what can be shown now, `flush` the
    rest at the end. Only the end of what arrived that could begin a piece of the key (the
    longest end that occurs in the key, usually a character or two) waits for the next delta."""

    def __init__(self, mask: KeyMask) -> None:
        self._mask = mask
        self._held = ""

    def feed(self, delta: str) -> str:
        key = self._mask.key
        if key is None:
            return delta
        held = self._held + delta
        # A piece starting before `decided` cannot go on in a later delta: from its start to the
        # end would otherwise be a longer end of `held` found in the key.
        decided = len(held)
        for size in range(min(len(held), len(key) - 1), 0, -1):
            if held[-size:] in key:
                decided -= size
                break
        shown, cut = self._mask._mask(held, decided)
        self._held = held[cut:]
        return shown

    def flush(self) -> str:
        held, self._held = self._held, ""
        return self._mask.text(held)
