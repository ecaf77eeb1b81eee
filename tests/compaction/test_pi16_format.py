"""Pi 1.6's session format (addendum `pi-behavior-1.6-and-omp18.md` §2–§7): system messages,
checkpoints on compaction entries and `context_edit` entries, in the context, estimates, cut
points, preparation, serialization, branch summaries and the tree. Test names cite the statements."""

from __future__ import annotations

import json
import math
from typing import Any

from compactd.compaction.branch import prepare_branch_entries
from compactd.compaction.cut_points import find_cut_point, is_turn_start, is_valid_cut_point
from compactd.compaction.prepare import NotPrepared, estimate_projected_context_tokens, prepare_compaction
from compactd.compaction.serialize import serialize_messages
from compactd.compaction.settings import CompactionSettings
from compactd.compaction.tokens import estimate_tokens
from compactd.session import Session, build_session_context, convert_to_llm
from compactd.session.context import (
    checkpoint_system_message,
    context_from_path,
    project_path,
    recent_path,
    replay_system_messages,
)
from compactd.session.model import parse_entry
from compactd.session.views import entry_kind, entry_preview

from .builders import Builder, image_block, tool_call, usage

TOOL_READ = {"name": "read", "description": "Read a file", "parameters": {"type": "object"}}
TOOL_BASH = {"name": "bash", "description": "Run a command", "parameters": {"type": "object"}}


def system_msg(content: Any = "", ts: int = 1_700_000_000_000, **fields: Any) -> dict[str, Any]:
    return {"role": "system", "content": content, "timestamp": ts, **fields}


def edit(b: Builder, target: str, replacement: Any = None) -> str:
    return b._append("context_edit", targetId=target, replacement=replacement)


def roles(messages: list[dict[str, Any]]) -> list[str]:
    return [m["role"] for m in messages]


# --- §2 system messages --------------------------------------------------------------------------


def test_q16_4_replay_joins_text_merges_sections_and_tools() -> None:
    first = system_msg("Base.", ts=5, sections={"preamble": "P", "cwd": "/a"}, toolsAdded=[TOOL_READ, TOOL_BASH])
    second = system_msg("", ts=9, sections={"cwd": None, "rules": "R"}, toolsRemoved=[{"name": "bash"}],
                        toolsAdded=[{**TOOL_READ, "description": "Read v2"}])
    third = system_msg([{"type": "text", "text": "More."}], ts=12)
    replay = replay_system_messages([first, {"role": "user", "content": "x"}, second, third])
    assert replay == {
        "role": "system",
        "content": "Base.\n\nMore.",  # empty content dropped, blank line between
        "sections": {"preamble": "P", "rules": "R"},  # later wins, null deletes
        "toolsAdded": [{**TOOL_READ, "description": "Read v2"}],  # removed, then (re)added by name
        "timestamp": 5,  # the first system message's
    }


def test_q16_4_replay_is_none_without_system_messages() -> None:
    assert replay_system_messages([{"role": "user", "content": "hi"}]) is None
    assert replay_system_messages([system_msg("")]) == {"role": "system", "content": "", "timestamp": 1_700_000_000_000}


def test_q16_6_null_content_reads_as_empty_string() -> None:
    b = Builder()
    b.message({"role": "system", "content": None, "timestamp": 1})
    assert build_session_context(b.entries).messages == [{"role": "system", "content": "", "timestamp": 1}]


def test_q16_7_system_passes_convert_to_llm_unchanged() -> None:
    message = system_msg("", sections={"preamble": "P"})
    assert convert_to_llm([message, {"role": "user", "content": "q"}])[0] is message


def test_q16_8_estimate_counts_text_images_sections_and_added_tools() -> None:
    message = system_msg([{"type": "text", "text": "x" * 10}, image_block()], sections={"a": "y" * 7, "b": None},
                         toolsAdded=[TOOL_READ], toolsRemoved=[{"name": "n" * 400}])
    tools_json = json.dumps([TOOL_READ], separators=(",", ":"))
    assert estimate_tokens(message) == math.ceil((10 + 4800 + 7 + len(tools_json)) / 4)
    assert estimate_tokens(system_msg("abcd")) == 1


def test_q16_9_system_message_is_no_cut_point_but_stops_the_pull_back() -> None:
    b = Builder()
    b.user("old " * 200)
    b.assistant("a " * 200)
    sys_id = b.message(system_msg("", sections={"cwd": "/b"}))
    b.model_change()
    b.user("new " * 200)
    b.assistant("done")
    projected = project_path(b.path())
    sys_item = next(p for p in projected if p.entry["id"] == sys_id)
    assert not is_valid_cut_point(sys_item) and not is_turn_start(sys_item)
    cut = find_cut_point(projected, 0, len(projected), keep_recent_tokens=150)
    kept = projected[cut.first_kept_entry_index].entry
    assert kept["type"] == "model_change"  # pulled back over the metadata, not over the system message


def test_q16_10_system_messages_are_never_summarized_or_serialized() -> None:
    b = Builder()
    b.message(system_msg("SYSTEM TEXT", sections={"rules": "RULES"}))
    b.user("first " * 300)
    b.assistant("answer " * 300)
    b.user("second " * 300)
    b.assistant("answer two")
    prep = prepare_compaction(b.path(), CompactionSettings(keep_recent_tokens=200))
    assert prep
    assert "system" not in roles([m.message for m in prep.messages_to_summarize])
    assert "SYSTEM" not in serialize_messages([system_msg("SYSTEM TEXT"), {"role": "user", "content": "u"}])


def test_q16_11_q16_35_kept_range_system_messages_are_dropped_later_ones_stay() -> None:
    b = Builder()
    b.user("u1")
    kept = b.assistant("a1")
    b.message(system_msg("", sections={"cwd": "/kept-range"}))
    b.user("u2")
    b.compaction(kept, summary="S")
    b.message(system_msg("", sections={"cwd": "/after"}))
    b.user("u3")
    messages = build_session_context(b.entries).messages
    assert roles(messages) == ["compactionSummary", "assistant", "user", "system", "user"]
    assert messages[3]["sections"] == {"cwd": "/after"}


def test_q16_12_branch_summary_counts_system_messages_in_the_budget_but_sends_no_text() -> None:
    b = Builder()
    b.user("u")
    b.message(system_msg("x" * 400))
    prep = prepare_branch_entries(b.entries, token_budget=0)
    assert roles([m.message for m in prep.messages]) == ["user", "system"]
    assert prep.total_tokens == 1 + 100
    assert serialize_messages([m.message for m in prep.messages]) == "[User]: u"


# --- §3 checkpoints --------------------------------------------------------------------------------


def test_q16_15_compaction_projects_checkpoint_then_summary() -> None:
    checkpoint = system_msg("", ts=77, sections={"preamble": "P"})
    b = Builder()
    b.message(system_msg("", sections={"preamble": "old"}))
    b.user("u1")
    kept = b.user("u2")
    b.compaction(kept, summary="S", systemMessage=checkpoint)
    b.user("u3")
    messages = build_session_context(b.entries).messages
    assert messages[0] == checkpoint
    assert messages[1]["role"] == "compactionSummary" and messages[1]["summary"] == "S"
    assert roles(messages[2:]) == ["user", "user"]
    # An older file without a checkpoint: only the summary, as before.
    del b.entries[3]["systemMessage"]
    assert roles(build_session_context(b.entries).messages) == ["compactionSummary", "user", "user"]


def test_q16_18_older_compaction_in_the_kept_range_projects_nothing() -> None:
    b = Builder()
    first = b.user("u1")
    b.compaction(first, summary="OLD", systemMessage=system_msg("old checkpoint"))
    b.user("u2")
    b.compaction(first, summary="NEW", systemMessage=system_msg("new checkpoint"))
    messages = build_session_context(b.entries).messages
    u1, u2 = [{"type": "text", "text": "u1"}], [{"type": "text", "text": "u2"}]
    assert [m.get("summary") or m.get("content") for m in messages] == ["new checkpoint", "NEW", u1, u2]


def test_q16_14_checkpoint_replays_the_projection_before_the_new_compaction() -> None:
    b = Builder()
    b.message(system_msg("", ts=1, sections={"preamble": "P", "cwd": "/a"}, toolsAdded=[TOOL_READ]))
    b.user("u1")
    kept = b.user("u2")
    b.compaction(kept, systemMessage=system_msg("", ts=2, sections={"preamble": "P", "cwd": "/a"}, toolsAdded=[TOOL_READ]))
    b.message(system_msg("", ts=3, sections={"cwd": "/b"}, toolsAdded=[TOOL_BASH]))
    b.user("u3")
    assert checkpoint_system_message(b.path()) == {
        "role": "system", "content": "", "sections": {"preamble": "P", "cwd": "/b"},
        "toolsAdded": [TOOL_READ, TOOL_BASH], "timestamp": 2,
    }
    pre_16 = Builder()
    pre_16.user("u")
    assert checkpoint_system_message(pre_16.path()) is None  # omitted: nothing to replay


def test_q16_14_the_store_stamps_the_checkpoint_with_the_entry_time(tmp_path: Any) -> None:
    session = Session.create(str(tmp_path), tmp_path / "s.jsonl")
    session.append_message({"role": "user", "content": "u", "timestamp": 1})
    entry_id = session.append_compaction("S", session.entries[0]["id"], 10, systemMessage=system_msg("", ts=5))
    entry = session.by_id[entry_id]
    parse_entry(entry)
    from compactd.session.clock import iso_to_ms

    assert entry["systemMessage"]["timestamp"] == iso_to_ms(entry["timestamp"])
    assert list(entry)[-1] == "systemMessage"


def test_q16_31_retain_none_compaction_keeps_nothing_before_it() -> None:
    b = Builder()
    b.user("u1")
    b.assistant("a1")
    own = f"e{len(b.entries) + 1:03d}"
    assert b.compaction(own, summary="S") == own
    b.model_change()
    b.thinking("off")
    b.user("u2")
    assert roles(build_session_context(b.entries).messages) == ["compactionSummary", "user"]
    assert [e["id"] for e in recent_path(b.by_id, b.leaf)][0] == own  # the walk stops at it


# --- §4 context edits ----------------------------------------------------------------------------


def test_q16_23_null_hides_the_target_and_edits_project_to_nothing() -> None:
    b = Builder()
    b.user("u")
    answer = b.assistant("cut by the length limit", stop="length")
    edit(b, answer)
    b.user("again")
    ctx = build_session_context(b.entries)
    assert roles(ctx.messages) == ["user", "user"]


def test_q16_23_replacement_swaps_content_and_keeps_every_other_field() -> None:
    b = Builder()
    user_id = b.user("secret")
    answer = b.assistant("long answer", usage_=usage(999))
    result = b.tool_result("c1", "read", "big output")
    custom = b.custom_message("note")
    edit(b, user_id, {"content": "redacted"})
    edit(b, answer, {"content": "short"})
    edit(b, result, {"content": "elided"})
    edit(b, custom, {"content": "note v2"})
    messages = build_session_context(b.entries).messages
    assert messages[0]["content"] == "redacted"  # a user's string stays a string
    assert messages[1]["content"] == [{"type": "text", "text": "short"}]  # Q16-22: one text block
    assert messages[1]["usage"]["totalTokens"] == 999 and messages[1]["stopReason"] == "stop"
    assert messages[2]["content"] == [{"type": "text", "text": "elided"}] and messages[2]["toolCallId"] == "c1"
    assert messages[3]["content"] == "note v2"
    assert b.entries[1]["message"]["content"] == [{"type": "text", "text": "long answer"}]  # raw entry untouched


def test_q16_23_q16_24_latest_edit_on_the_active_branch_wins() -> None:
    b = Builder()
    target = b.user("original")
    first_edit = edit(b, target)  # omit
    edit(b, target, {"content": "restored"})
    assert build_session_context(b.entries).messages[0]["content"] == "restored"
    # Before the edits (navigation), the original shows again.
    assert build_session_context(b.entries, target).messages[0]["content"][0]["text"] == "original"
    assert build_session_context(b.entries, first_edit).messages == []
    # On another branch the edits do not exist.
    b.branch_from(target)
    b.assistant("other branch")
    assert roles(build_session_context(b.entries).messages) == ["user", "assistant"]


def test_q16_23_non_null_replacement_leaves_other_roles_alone() -> None:
    b = Builder()
    summary = b.branch_summary("explored")
    edit(b, summary, {"content": "ignored"})
    assert build_session_context(b.entries).messages[0]["summary"] == "explored"


def test_q16_26_omitted_entries_weigh_nothing_are_not_cut_points_and_not_summarized() -> None:
    b = Builder()
    b.user("first " * 100)
    b.assistant("answer " * 100)
    big = b.user("HIDDEN " * 400)
    edit(b, big)
    b.user("last " * 100)
    b.assistant("done")
    projected = project_path(b.path())
    hidden = next(p for p in projected if p.entry["id"] == big)
    assert hidden.messages == [] and not is_valid_cut_point(hidden)
    prep = prepare_compaction(b.path(), CompactionSettings(keep_recent_tokens=50))
    assert prep
    assert all("HIDDEN" not in json.dumps(m.message) for m in prep.messages_to_summarize)
    assert "HIDDEN" not in prep.conversation_text


def test_q16_27_q16_40_usage_older_than_an_edit_or_compaction_is_not_trusted() -> None:
    b = Builder()
    b.message(system_msg("x" * 40))  # 10 tokens
    b.user("u" * 40)  # 10 tokens
    b.assistant("a" * 40, usage_=usage(5000))  # 10 tokens
    path = b.path()
    assert estimate_projected_context_tokens(project_path(path), path).tokens == 5000  # usage is current
    hidden = b.user("h" * 400)
    edit(b, hidden)
    path = b.path()
    # The edit came after the usage: heuristic, the replayed system message counted once.
    assert estimate_projected_context_tokens(project_path(path), path).tokens == 10 + 10 + 10
    assert prepare_compaction(path, CompactionSettings(keep_recent_tokens=1)).tokens_before == 30


def test_q16_39_an_omitted_last_answer_makes_the_last_input_a_turn_prefix() -> None:
    b = Builder()
    b.user("early " * 200)
    b.assistant("early answer " * 50)
    last_input = b.user("LAST INPUT " * 200)
    failed = b.assistant("cut", stop="length")
    edit(b, failed)
    projected = project_path(b.path())
    cut = find_cut_point(projected, 0, len(projected), keep_recent_tokens=100)
    kept = projected[cut.first_kept_entry_index].entry
    assert kept["id"] == failed  # moved past the last input, which becomes a turn prefix
    assert cut.is_split_turn and projected[cut.turn_start_index].entry["id"] == last_input


def test_q16_41_nothing_to_compact_when_everything_is_hidden() -> None:
    b = Builder()
    target = b.user("u " * 300)
    edit(b, target)
    assert isinstance(prepare_compaction(b.path()), NotPrepared)


def test_q16_28_branch_summaries_apply_the_latest_edit_among_the_collected_entries() -> None:
    b = Builder()
    b.user("kept")
    answer = b.assistant("old answer", calls=[tool_call("c1", "edit", {"path": "f.py"})])
    hidden = b.user("hidden")
    edit(b, answer, {"content": "new answer"})
    edit(b, hidden)
    prep = prepare_branch_entries(b.entries)
    contents = [m.message["content"] for m in prep.messages]
    assert contents == [[{"type": "text", "text": "kept"}], [{"type": "text", "text": "new answer"}]]
    assert prep.file_lists == ([], [])  # the replaced answer no longer carries its tool call


def test_q16_29_tree_previews() -> None:
    b = Builder()
    target = b.user("u")
    omit = edit(b, target)
    replace = edit(b, target, {"content": "v"})
    sys_id = b.message(system_msg("", sections={"cwd": "/a"}, toolsAdded=[TOOL_READ], toolsRemoved=[{"name": "bash"}]))
    by_id = b.by_id
    # Human text, not Pi's "[context omit: <id>]" (issue 27); the tree panel adds the target's text.
    assert entry_preview(by_id[omit]) == "context edit: omits a message"
    assert entry_preview(by_id[replace]) == "context edit: replaces a message"
    assert entry_kind(by_id[sys_id]) == "system"
    assert entry_preview(by_id[sys_id]) == "system: sections: cwd; tools +read; tools -bash"


def test_q16_2_q16_21_entries_validate() -> None:
    b = Builder()
    target = b.user("u")
    edit(b, target, {"content": [{"type": "text", "text": "x"}]})
    edit(b, target)
    b.message(system_msg("", sections={"a": None}, toolsAdded=[TOOL_READ]))
    b._append("usage", kind="cache_warm", provider="p", model="m", usage=usage(10))
    for entry in b.entries:
        parse_entry(entry)
    assert context_from_path(b.path()).messages[-1]["role"] == "system"
