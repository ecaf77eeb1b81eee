"""Step budgets: exactly the steps asked for, and the long walks of the compiled modules pass
through interpreted code every CHUNK steps (where a waiting thread gets the interpreter lock)."""

from __future__ import annotations

from typing import Any

import pytest
from compactd.session import handover
from compactd.session.context import context_from_path, context_at, recent_path
from compactd.session.steps import CHUNK, step_budget


@pytest.mark.parametrize("count", [0, 1, CHUNK - 1, CHUNK, CHUNK + 1, 3 * CHUNK + 5, -4])
def test_a_budget_has_exactly_the_steps_asked_for(count: int) -> None:
    assert list(step_budget(count)) == [None] * max(count, 0)


def _chain(n: int) -> dict[str, dict[str, Any]]:
    by_id: dict[str, dict[str, Any]] = {}
    for i in range(n):
        by_id[f"e{i}"] = {"type": "message", "id": f"e{i}", "parentId": f"e{i - 1}" if i else None,
                          "message": {"role": "user", "content": "hi"}}
    return by_id


def test_long_walks_pass_through_the_interpreter_every_chunk(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    real = handover.next_chunk

    def counted(size: int) -> Any:
        calls.append(size)
        return real(size)

    monkeypatch.setattr(handover, "next_chunk", counted)
    n = 5 * CHUNK
    by_id = _chain(n)
    leaf = f"e{n - 1}"
    path = recent_path(by_id, leaf)
    assert len(path) == n and len(calls) >= n // CHUNK - 1
    calls.clear()
    assert len(context_at(by_id, leaf).messages) == n and len(calls) >= n // CHUNK - 1
    calls.clear()
    assert len(context_from_path(path, leaf).messages) == n and len(calls) >= n // CHUNK - 1


@pytest.mark.parametrize("count", [0, 1, 255, 256, 257, 3 * 256 + 5])
def test_a_budget_of_smaller_chunks_has_exactly_the_steps_asked_for(count: int) -> None:
    assert list(step_budget(count, 256)) == [None] * count


def test_the_tree_report_passes_through_the_interpreter_every_tree_chunk(monkeypatch: pytest.MonkeyPatch) -> None:
    """Its nodes are heavy (~10 us): every TREE_STEP_CHUNK of them, not every CHUNK (issue 29); the
    scan for context edits and the leaf's path set take budgets too."""
    from compactd.session import Session
    from compactd.session.views import TREE_STEP_CHUNK, tree_report

    calls: list[int] = []
    real = handover.next_chunk

    def counted(size: int) -> Any:
        calls.append(size)
        return real(size)

    monkeypatch.setattr(handover, "next_chunk", counted)
    n = 3 * CHUNK
    session = Session({"type": "session", "version": 3, "id": "s", "timestamp": "2025-01-01T00:00:00Z", "cwd": "/"},
                      list(_chain(n).values()))
    report = tree_report(session)
    assert [node["id"] for node in report["nodes"]] == [f"e{i}" for i in range(n)]
    assert calls.count(TREE_STEP_CHUNK) == n // TREE_STEP_CHUNK  # the nodes
    assert calls.count(CHUNK) >= 2 * (n // CHUNK)  # the leaf's path set and the context-edit scan
