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
