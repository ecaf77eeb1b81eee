"""The one-pass context of a path without context edits (`context_from_path`; a compaction restarts it)
and the context collected walking back from the leaf (`context_at`, no path built) equal the
general definition: model and thinking level from the latest entries that set them, messages from
`project_path`. And `recent_path` stops before a repeated id on a parentId cycle as `path_to`
does."""

from __future__ import annotations

from typing import Any

from compactd.session.context import _model_of, context_at, context_from_path, project_path, recent_path
from compactd.session.tree import path_to
from hypothesis import given, settings
from hypothesis import strategies as st

from .builders import Builder, random_session


def _reference(path: list[dict[str, Any]]) -> tuple[Any, ...]:
    """The definition, written plainly: two passes, every entry projected."""
    thinking, model = "off", None
    for entry in path:
        if entry.get("type") == "thinking_level_change" and isinstance(entry.get("thinkingLevel"), str):
            thinking = entry["thinkingLevel"]
        elif entry.get("type") == "model_change" and _model_of(entry) is not None:
            model = _model_of(entry)
        elif entry.get("type") == "message" and isinstance(entry.get("message"), dict):
            if entry["message"].get("role") == "assistant":
                model = {"provider": entry["message"].get("provider"), "modelId": entry["message"].get("model")}
    messages = [m for item in project_path(path) for m in item.messages]
    ids = [item.entry["id"] for item in project_path(path) for _ in item.messages]
    return messages, ids, thinking, model


@st.composite
def sessions(draw: Any) -> Builder:
    """Random sessions plus what the fast path must notice: null content, system messages,
    oh-my-pi and unusable model changes, assistant messages without a model, context edits."""
    b = draw(random_session())
    for _ in range(draw(st.integers(0, 6))):
        kind = draw(st.sampled_from(["null", "system", "omp", "bad_model", "no_model", "edit", "hide", "compact",
                                     "checkpoint", "keep_none", "thinking", "bad_thinking"]))
        if kind == "null":
            b.message({"role": draw(st.sampled_from(["user", "assistant", "toolResult", "developer"])), "content": None})
        elif kind == "system":
            b.message({"role": "system", "content": "be brief", "timestamp": 1})
        elif kind == "omp":
            b._append("model_change", model="anthropic/claude-x")
        elif kind == "bad_model":
            b._append("model_change", provider=3)
        elif kind == "no_model":
            b.message({"role": "assistant", "content": [{"type": "text", "text": "x"}]})
        elif kind == "keep_none":  # Q16-31: a compaction naming itself keeps nothing; so does one without an id
            own = b.compaction(None)
            if draw(st.booleans()):
                b.by_id[own]["firstKeptEntryId"] = own
        elif kind == "thinking":
            b.thinking(draw(st.sampled_from(["low", "high"])))
        elif kind == "bad_thinking":
            b._append("thinking_level_change", thinkingLevel=None)
        elif kind in ("compact", "checkpoint"):  # kept ranges holding system messages, older compactions
            extra: dict[str, Any] = {}
            if kind == "checkpoint":
                extra["systemMessage"] = {"role": "system", "content": "replayed", "timestamp": 2}
            b.compaction(draw(st.sampled_from([e["id"] for e in b.path()] + ["missing"])), **extra)
        else:
            target = draw(st.sampled_from([e["id"] for e in b.path()]))
            replacement = None if kind == "hide" else {"content": "edited"}
            b._append("context_edit", targetId=target, replacement=replacement)
        b.user("next")
    return b


@settings(max_examples=300, deadline=None)
@given(sessions(), st.data())
def test_one_pass_context_equals_the_definition(b: Builder, data: st.DataObject) -> None:
    leaf = data.draw(st.sampled_from([e["id"] for e in b.entries]))
    path = path_to(b.by_id, leaf)
    ctx = context_from_path(path, leaf)
    assert (ctx.messages, ctx.entry_ids, ctx.thinking_level, ctx.model) == _reference(path)


@settings(max_examples=300, deadline=None)
@given(sessions(), st.data())
def test_the_context_walked_back_from_the_leaf_equals_the_definition(b: Builder, data: st.DataObject) -> None:
    leaf = data.draw(st.sampled_from([e["id"] for e in b.entries]))
    ctx = context_at(b.by_id, leaf)
    assert (ctx.messages, ctx.entry_ids, ctx.thinking_level, ctx.model) == _reference(path_to(b.by_id, leaf))
    assert ctx.leaf_id == leaf


class _CountingLookups(dict[str, Any]):
    """A session's id map that counts `get` (how `context_at` walks)."""

    lookups = 0

    def get(self, key: Any, default: Any = None) -> Any:
        self.lookups += 1
        return super().get(key, default)


def test_the_context_walked_back_through_a_kept_range() -> None:
    """The kept range of the latest compaction without its system messages, an older compaction
    contributing nothing, custom messages and branch summaries projected, null contents repaired,
    an unusable model change ignored, the thinking level from before the kept range."""
    b = Builder()
    b.thinking("low")
    b.assistant("sets the model")
    b.user("summarized")
    kept = b.user("kept")
    b.message({"role": "system", "content": "dropped", "timestamp": 1})
    b.compaction(kept, summary="older")
    b.custom_message("note")
    b.branch_summary("explored")
    b.message({"role": "assistant", "content": None})
    b.compaction(kept, systemMessage={"role": "system", "content": "replayed", "timestamp": 2})
    b.message({"role": "system", "content": "after the compaction: kept", "timestamp": 3})
    b._append("model_change", provider=3)  # unusable: the model stays that of the kept assistant message
    b.message({"role": "toolResult", "content": None})
    leaf = b.user("now")
    by_id = _CountingLookups(b.by_id)
    ctx = context_at(by_id, leaf)
    assert by_id.lookups == len(b.entries)  # one walk, back to the thinking level at the root
    assert (ctx.messages, ctx.entry_ids, ctx.thinking_level, ctx.model) == _reference(path_to(b.by_id, leaf))
    assert [m["role"] for m in ctx.messages] == [
        "system", "compactionSummary", "user", "custom", "branchSummary", "assistant", "system", "toolResult", "user"]
    assert ctx.messages[-2]["content"] == [] and ctx.messages[5]["content"] == []
    assert ctx.thinking_level == "low" and ctx.model == {"provider": None, "modelId": None}


def test_the_context_walked_back_on_a_parent_cycle_is_that_of_the_path_before_the_repeat() -> None:
    b = Builder()
    first = b.user("a")
    b.assistant("b")
    kept = b.user("c")
    b.compaction(kept)
    last = b.user("d")
    b.by_id[first]["parentId"] = last  # a corrupt file: the root points at the leaf
    ctx = context_at(b.by_id, last)
    assert (ctx.messages, ctx.entry_ids, ctx.thinking_level, ctx.model) == _reference(path_to(b.by_id, last))
    assert ctx.entry_ids[-2:] == [kept, last]


def test_recent_path_on_a_parent_cycle_stops_before_the_repeat() -> None:
    b = Builder()
    first = b.user("a")
    b.assistant("b")
    last = b.user("c")
    by_id = b.by_id
    by_id[first]["parentId"] = last  # a corrupt file: the root points at the leaf
    tail = recent_path(by_id, last)
    assert [e["id"] for e in tail] == [e["id"] for e in path_to(by_id, last)]
    assert len(tail) == 3
