"""buildSessionContext (spec §4.1, D-3) and convertToLlm (§4.2)."""

from __future__ import annotations

from compactd.session import Session, build_session_context, convert_to_llm
from compactd.session.context import (
    BRANCH_SUMMARY_LEAD,
    COMPACTION_SUMMARY_LEAD,
    bash_execution_text,
    project_entry,
)

from .builders import assistant, entry, tool_call, tool_result, user


def texts(messages: list[dict]) -> list[str]:
    out = []
    for m in messages:
        content = m.get("content")
        if isinstance(content, list) and content and content[0].get("type") == "text":
            out.append(content[0]["text"])
        else:
            out.append(m.get("summary") or m["role"])
    return out


def test_empty_and_explicit_null_leaf() -> None:
    empty = build_session_context([])
    assert empty.messages == [] and empty.thinking_level == "off" and empty.model is None
    entries = [entry("a", None, message=user("x"))]
    assert build_session_context(entries, None).messages == []


def test_single_compaction_gives_summary_kept_and_after() -> None:
    entries = [
        entry("u1", None, message=user("u1")),
        entry("a1", "u1", message=assistant("a1")),
        entry("u2", "a1", message=user("u2")),
        entry("a2", "u2", message=assistant("a2")),
        entry("c", "a2", "compaction", summary="S", firstKeptEntryId="u2", tokensBefore=50),
        entry("u3", "c", message=user("u3")),
        entry("a3", "u3", message=assistant("a3")),
    ]
    ctx = build_session_context(entries)
    assert len(ctx.messages) == 5
    assert texts(ctx.messages) == ["S", "u2", "a2", "u3", "a3"]
    assert ctx.messages[0] == {"role": "compactionSummary", "summary": "S", "tokensBefore": 50,
                               "timestamp": 1735689600000}
    assert ctx.entry_ids == ["c", "u2", "a2", "u3", "a3"]


def test_multiple_compactions_use_only_the_latest_and_skip_older_in_kept_region() -> None:
    # D-3: c1 lies inside c2's kept region (c2 keeps from u1) and contributes nothing.
    entries = [
        entry("u1", None, message=user("u1")),
        entry("c1", "u1", "compaction", summary="S1", firstKeptEntryId="u1", tokensBefore=1),
        entry("u2", "c1", message=user("u2")),
        entry("c2", "u2", "compaction", summary="S2", firstKeptEntryId="u1", tokensBefore=2),
        entry("u3", "c2", message=user("u3")),
    ]
    ctx = build_session_context(entries)
    assert texts(ctx.messages) == ["S2", "u1", "u2", "u3"]
    assert ctx.entry_ids == ["c2", "u1", "u2", "u3"]


def test_first_kept_not_on_path_keeps_only_summary_and_after() -> None:
    entries = [
        entry("u1", None, message=user("u1")),
        entry("c", "u1", "compaction", summary="S", firstKeptEntryId="elsewhere", tokensBefore=1),
        entry("u2", "c", message=user("u2")),
    ]
    assert texts(build_session_context(entries).messages) == ["S", "u2"]


def test_model_and_thinking_level_last_one_wins() -> None:
    entries = [
        entry("m", None, "model_change", provider="anthropic", modelId="claude"),
        entry("t", "m", "thinking_level_change", thinkingLevel="high"),
        entry("a", "t", message=assistant("x", provider="openai", model="gpt-4o")),
        entry("t2", "a", "thinking_level_change", thinkingLevel="low"),
    ]
    ctx = build_session_context(entries)
    assert ctx.model == {"provider": "openai", "modelId": "gpt-4o"}
    assert ctx.thinking_level == "low"
    after = entries + [entry("m2", "t2", "model_change", provider="anthropic", modelId="opus")]
    assert build_session_context(after).model == {"provider": "anthropic", "modelId": "opus"}


def test_branches_follow_the_given_leaf_with_branch_summary_in_place() -> None:
    entries = [
        entry("u1", None, message=user("u1")),
        entry("a1", "u1", message=assistant("a1")),
        entry("x", "a1", message=user("abandoned")),
        entry("bs", "a1", "branch_summary", fromId="x", summary="BS"),
        entry("u2", "bs", message=user("u2")),
    ]
    ctx = build_session_context(entries, "u2")
    assert [m["role"] for m in ctx.messages] == ["user", "assistant", "branchSummary", "user"]
    assert ctx.messages[2]["fromId"] == "x"
    assert texts(build_session_context(entries, "x").messages) == ["u1", "a1", "abandoned"]


def test_empty_branch_summary_projects_to_nothing() -> None:
    assert project_entry(entry("bs", None, "branch_summary", fromId="root", summary="")) == []


def test_unknown_leaf_uses_last_entry_and_orphans_only_see_their_chain() -> None:
    entries = [
        entry("u1", None, message=user("u1")),
        entry("o", "ghost", message=user("orphan")),
    ]
    assert texts(build_session_context(entries, "nope").messages) == ["orphan"]
    assert texts(build_session_context(entries, "u1").messages) == ["u1"]


def test_labels_custom_and_info_entries_never_in_context_but_custom_message_is() -> None:
    entries = [
        entry("u1", None, message=user("u1")),
        entry("l", "u1", "label", targetId="u1", label="L"),
        entry("c", "l", "custom", customType="state", data={"x": 1}),
        entry("i", "c", "session_info", name="n"),
        entry("cm", "i", "custom_message", customType="note", content="injected", display=True),
    ]
    ctx = build_session_context(entries)
    assert [m["role"] for m in ctx.messages] == ["user", "custom"]
    llm = convert_to_llm(ctx.messages)
    assert llm[1] == {"role": "user", "content": [{"type": "text", "text": "injected"}],
                      "timestamp": ctx.messages[1]["timestamp"]}


def test_null_content_is_repaired() -> None:
    broken = entry("a", None, message={"role": "assistant", "content": None, "timestamp": 1})
    assert project_entry(broken)[0]["content"] == []
    cm = entry("cm", None, "custom_message", customType="t", display=False)
    assert project_entry(cm)[0]["content"] == []


def test_convert_bash_execution_formats() -> None:
    base = {"role": "bashExecution", "command": "ls -la", "output": "a\nb", "exitCode": 0,
            "cancelled": False, "truncated": False, "timestamp": 5}
    assert bash_execution_text(base) == "Ran `ls -la`\n```\na\nb\n```"
    assert bash_execution_text({**base, "output": ""}) == "Ran `ls -la`\n(no output)"
    assert bash_execution_text({**base, "exitCode": 2}).endswith("```\n\nCommand exited with code 2")
    assert bash_execution_text({**base, "cancelled": True, "exitCode": 2}).endswith("\n\n(command cancelled)")
    truncated = bash_execution_text({**base, "truncated": True, "fullOutputPath": "/tmp/out.txt"})
    assert truncated.endswith("```\n\n[Output truncated. Full output: /tmp/out.txt]")
    assert convert_to_llm([{**base, "excludeFromContext": True}]) == []
    converted = convert_to_llm([base])[0]
    assert converted["role"] == "user" and converted["timestamp"] == 5


def test_convert_summaries_use_the_exact_wrappers() -> None:
    comp = convert_to_llm([{"role": "compactionSummary", "summary": "S", "tokensBefore": 1, "timestamp": 1}])[0]
    assert comp["content"][0]["text"] == f"{COMPACTION_SUMMARY_LEAD}\n\n<summary>\nS\n</summary>"
    branch = convert_to_llm([{"role": "branchSummary", "summary": "B", "fromId": "x", "timestamp": 1}])[0]
    assert branch["content"][0]["text"] == f"{BRANCH_SUMMARY_LEAD}\n\n<summary>\nB</summary>"


def test_convert_passes_core_roles_and_drops_unknown() -> None:
    u, a = user("u"), assistant("a", tool_calls=[tool_call("t1", "read", path="x")])
    r = tool_result("t1", "read", "content")
    out = convert_to_llm([u, a, r, {"role": "weird"}, {"role": "developer", "content": "d", "timestamp": 1}])
    assert out[:3] == [u, a, r] and out[3]["role"] == "developer" and len(out) == 4


def test_convert_pruned_tool_result_sends_text_only() -> None:
    pruned = {**tool_result("t", "bash", "[Output truncated - 900 tokens]"), "prunedAt": 1}
    pruned["content"].append({"type": "image", "data": "xx", "mimeType": "image/png"})
    out = convert_to_llm([pruned])[0]
    assert out["content"] == [{"type": "text", "text": "[Output truncated - 900 tokens]"}]
    no_text = {**tool_result("t", "bash", "x"), "content": [], "prunedAt": 1}
    assert convert_to_llm([no_text])[0]["content"] == [{"type": "text", "text": "[Output truncated]"}]


def test_context_of_live_session_matches_after_compaction_append() -> None:
    session = Session.create("/w", in_memory=True)
    u1 = session.append_message(user("u1"))
    session.append_message(assistant("a1"))
    u2 = session.append_message(user("u2"))
    session.append_compaction("SUM", u2, 123, {"readFiles": [], "modifiedFiles": []})
    session.append_message(assistant("a2"))
    ctx = build_session_context(session.entries, session.leaf_id, session.by_id)
    assert [m["role"] for m in ctx.messages] == ["compactionSummary", "user", "assistant"]
    assert u1 not in ctx.entry_ids
