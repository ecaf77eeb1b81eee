"""§5 token accounting: K-1..K-8 and edge cases 1–5, with D-12 (UTF-16 units) pinned."""

from __future__ import annotations

from compactd.compaction.settings import CompactionSettings
from compactd.compaction.tokens import (
    ESTIMATED_IMAGE_CHARS,
    calculate_context_tokens,
    compaction_threshold,
    estimate_context_tokens,
    estimate_tokens,
    get_last_assistant_usage,
    has_valid_usage,
    should_compact,
)

from .builders import (
    Builder,
    assistant_msg,
    bash_msg,
    image_block,
    text_block,
    tool_call,
    tool_result_msg,
    usage,
    user_msg,
)


def test_user_string_and_blocks_ceil_chars_over_4() -> None:
    assert estimate_tokens({"role": "user", "content": "abcde"}) == 2  # ceil(5/4)
    assert estimate_tokens(user_msg([text_block("abcd"), text_block("e")])) == 2
    assert estimate_tokens(user_msg("")) == 0


def test_images_count_4800_chars_in_user_tool_result_and_custom() -> None:  # edge 5, K-2
    assert ESTIMATED_IMAGE_CHARS == 4800
    assert estimate_tokens(user_msg([image_block()])) == 1200  # [PI-NEW]: users too
    assert estimate_tokens(tool_result_msg("c", "read", [text_block("abcd"), image_block()])) == 1201
    assert estimate_tokens({"role": "custom", "customType": "x", "content": [image_block(), image_block()]}) == 2400
    assert estimate_tokens({"role": "custom", "customType": "x", "content": "abcdefgh"}) == 2


def test_assistant_counts_text_thinking_and_tool_calls_with_js_json() -> None:
    msg = assistant_msg("ab", thinking="cd", calls=[tool_call("1", "read", {"path": "x", "n": 1.0})])
    # 2 + 2 + len("read") + len('{"path":"x","n":1}') = 4 + 4 + 18 = 26 chars → 7 tokens
    assert estimate_tokens(msg) == 7


def test_bash_summaries_developer_and_unknown_roles() -> None:
    assert estimate_tokens(bash_msg("ls", "abcdef")) == 2
    assert estimate_tokens(bash_msg("ls", "abcdef", excludeFromContext=True)) == 2  # still counted
    assert estimate_tokens({"role": "branchSummary", "summary": "x" * 9}) == 3
    assert estimate_tokens({"role": "compactionSummary", "summary": "x" * 8}) == 2
    assert estimate_tokens({"role": "developer", "content": "x" * 5}) == 2
    assert estimate_tokens({"role": "notARole", "content": "x" * 400}) == 0


def test_non_bmp_text_counts_two_units_per_character() -> None:  # D-12
    assert estimate_tokens(user_msg("😀😀")) == 1  # 4 units → 1 token (2 code points would also be 1)
    assert estimate_tokens(user_msg("😀😀😀")) == 2  # 6 units → 2 tokens; code points would say 1
    assert estimate_tokens(user_msg("é" * 5)) == 2  # BMP: one unit each
    assert estimate_tokens(assistant_msg(None, calls=[tool_call("1", "w", {"t": "😀"})])) == 3  # 1 + 10 units


def test_calculate_context_tokens() -> None:  # edge 1, K-3
    assert calculate_context_tokens({"input": 1000, "output": 500, "cacheRead": 200, "cacheWrite": 100,
                                     "totalTokens": 1800}) == 1800
    assert calculate_context_tokens({"input": 1000, "output": 500, "cacheRead": 200, "cacheWrite": 100,
                                     "totalTokens": 0}) == 1800
    assert calculate_context_tokens({"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0,
                                     "totalTokens": 0}) == 0


def test_valid_usage_rules() -> None:  # K-5 [PI-NEW]
    assert has_valid_usage(assistant_msg("x"))
    assert not has_valid_usage(assistant_msg("x", stop="aborted"))
    assert not has_valid_usage(assistant_msg("x", stop="error"))
    assert not has_valid_usage(assistant_msg("x", usage_=usage(0, input=0, output=0)))
    assert not has_valid_usage(user_msg("x"))
    no_usage = assistant_msg("x")
    del no_usage["usage"]
    assert not has_valid_usage(no_usage)


def test_get_last_assistant_usage_skips_invalid() -> None:  # edge 2, K-6
    b = Builder()
    b.user()
    b.assistant("first", usage_=usage(111))
    b.user()
    b.assistant("aborted", stop="aborted", usage_=usage(999))
    b.assistant("error", stop="error", usage_=usage(998))
    b.assistant("zero", usage_=usage(0, input=0, output=0))
    assert get_last_assistant_usage(b.entries)["totalTokens"] == 111
    only_users = Builder()
    only_users.user()
    assert get_last_assistant_usage(only_users.entries) is None


def test_estimate_context_tokens_without_usage_sums_heuristics() -> None:  # edge 4, K-7
    messages = [user_msg("a" * 8), assistant_msg("b" * 4, stop="aborted")]
    est = estimate_context_tokens(messages)
    assert (est.tokens, est.usage_tokens, est.trailing_tokens, est.last_usage_index) == (3, 0, 3, None)


def test_estimate_context_tokens_with_usage_adds_only_trailing() -> None:  # edge 4, K-7
    messages = [user_msg("a" * 400), assistant_msg("b", usage_=usage(5000)), user_msg("c" * 8),
                tool_result_msg("c1", "bash", "d" * 4)]
    est = estimate_context_tokens(messages)
    assert est.to_json() == {"tokens": 5003, "usageTokens": 5000, "trailingTokens": 3, "lastUsageIndex": 1}


def test_should_compact_is_strict_and_respects_enabled() -> None:  # edge 3, K-8
    settings = CompactionSettings(reserve_tokens=10000)
    assert should_compact(95000, 100000, settings)
    assert not should_compact(89000, 100000, settings)
    assert not should_compact(90000, 100000, settings)
    assert not should_compact(95000, 100000, CompactionSettings(enabled=False, reserve_tokens=10000))
    assert compaction_threshold(100000, settings) == 90000
    defaults = CompactionSettings()
    assert (defaults.reserve_tokens, defaults.keep_recent_tokens, defaults.enabled) == (16384, 20000, True)
