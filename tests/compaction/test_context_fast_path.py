"""The one-pass context of a path without context edits (`context_from_path`; a compaction restarts it)
equals the general definition: model and thinking level from the latest entries that set them,
messages from `project_path`. And `recent_path` stops before a repeated id on a parentId cycle
as `path_to` does."""

from __future__ import annotations

from typing import Any

from compactd.session.context import _model_of, context_from_path, project_path, recent_path
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
                                     "checkpoint"]))
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
