"""Property tests over random session trees: path, children and context invariants."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from compactd.session import Session, build_session_context
from compactd.session.context import project_entry

from .builders import assistant, user

# An operation is (kind, pick) where pick chooses an existing entry for leaf moves.
ops = st.lists(
    st.tuples(st.sampled_from(["user", "assistant", "branch", "reset", "label", "compact", "custom"]),
              st.integers(min_value=0, max_value=10_000)),
    min_size=1, max_size=60,
)


def build(operations: list[tuple[str, int]]) -> Session:
    session = Session.create("/w", in_memory=True)
    for kind, pick in operations:
        ids = [e["id"] for e in session.entries]
        if kind == "user":
            session.append_message(user(f"u{pick}"))
        elif kind == "assistant":
            session.append_message(assistant(f"a{pick}"))
        elif kind == "branch" and ids:
            session.branch(ids[pick % len(ids)])
        elif kind == "reset":
            session.reset_leaf()
        elif kind == "label" and ids:
            session.append_label_change(ids[pick % len(ids)], f"L{pick % 3}" if pick % 4 else None)
        elif kind == "compact" and ids:
            path = session.get_branch()
            if path:
                session.append_compaction("S", path[pick % len(path)]["id"], 1)
        elif kind == "custom":
            session.append_custom_message_entry("note", f"c{pick}", True)
    return session


@settings(max_examples=150, deadline=None)
@given(ops)
def test_paths_are_parent_chains_ending_at_the_entry(operations: list[tuple[str, int]]) -> None:
    session = build(operations)
    for entry in session.entries:
        path = session.get_branch(entry["id"])
        assert path[-1] is entry
        assert path[0]["parentId"] is None
        for parent, child in zip(path, path[1:]):
            assert child["parentId"] == parent["id"]


@settings(max_examples=150, deadline=None)
@given(ops)
def test_tree_contains_every_entry_once_and_children_match(operations: list[tuple[str, int]]) -> None:
    session = build(operations)
    seen: list[str] = []
    stack = list(session.get_tree())
    while stack:
        node = stack.pop()
        seen.append(node.entry["id"])
        assert [c.entry["id"] for c in node.children] == sorted(
            (e["id"] for e in session.get_children(node.entry["id"])),
            key=lambda i: [c.entry["id"] for c in node.children].index(i),
        )
        assert {c.entry["id"] for c in node.children} == {e["id"] for e in session.get_children(node.entry["id"])}
        stack.extend(node.children)
    assert sorted(seen) == sorted(session.by_id)


@settings(max_examples=150, deadline=None)
@given(ops)
def test_context_is_a_projection_of_the_path(operations: list[tuple[str, int]]) -> None:
    session = build(operations)
    if session.leaf_id is None:
        assert build_session_context(session.entries, None).messages == []
        return
    ctx = build_session_context(session.entries, session.leaf_id, session.by_id)
    path = session.get_branch()
    on_path = [e["id"] for e in path]
    assert len(ctx.messages) == len(ctx.entry_ids)
    assert all(i in on_path for i in ctx.entry_ids)
    compactions = [e for e in path if e["type"] == "compaction"]
    if not compactions:
        expected = [e["id"] for e in path for _ in project_entry(e)]
        assert ctx.entry_ids == expected
    else:
        assert ctx.entry_ids[0] == compactions[-1]["id"]
        rest = ctx.entry_ids[1:]
        # kept + after are in path order and contain no compaction entries (D-3)
        assert rest == sorted(rest, key=on_path.index)
        assert all(session.by_id[i]["type"] != "compaction" for i in rest)
        last = on_path.index(compactions[-1]["id"])
        after = [e["id"] for e in path[last + 1:] for _ in project_entry(e)]
        assert rest[len(rest) - len(after):] == after if after else True
    # labels and custom state never reach the context
    assert all(session.by_id[i]["type"] not in ("label", "custom", "session_info") for i in ctx.entry_ids)
