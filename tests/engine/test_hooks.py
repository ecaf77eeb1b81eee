"""Hook dispatch (H-1..H-5, edge cases 46–47): order, last answer wins, cancel stops, errors and
timeouts count as no answer, cancellation of the caller is not swallowed."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from compactd.engine.compactor import compact
from compactd.engine.hooks import CompositeHooks, Hooks, call_hook
from compactd.summarize.extractive import ExtractiveSummarizer

from .builders import new_session, settings, turn


class Member(Hooks):
    def __init__(self, name: str, log: list[str], answers: dict[str, Any] | None = None) -> None:
        self.name, self.log, self.answers = name, log, answers or {}

    async def _answer(self, event_name: str) -> Any:
        self.log.append(f"{event_name}{self.name}")
        answer = self.answers.get(event_name)
        if isinstance(answer, BaseException):
            raise answer
        if answer == "hang":
            await asyncio.sleep(3600)
        return answer

    async def before_compact(self, event: dict[str, Any]) -> Any:
        return await self._answer("before")

    async def compacting(self, event: dict[str, Any]) -> Any:
        return await self._answer("compacting")

    async def after_compact(self, event: dict[str, Any]) -> None:
        await self._answer("after")

    async def before_tree(self, event: dict[str, Any]) -> Any:
        return await self._answer("tree")


async def test_two_hook_sets_run_in_order_around_a_compaction(tmp_path: Path) -> None:
    session = new_session(tmp_path)
    for n in range(1, 5):
        turn(session, n)
    log: list[str] = []
    hooks = CompositeHooks([Member("1", log), Member("2", log, {"before": RuntimeError("boom")})])
    res = await compact(
        session, settings(tmp_path, compaction={"keepRecentTokens": 250}), ExtractiveSummarizer(), hooks=hooks
    )
    assert log == ["before1", "before2", "compacting1", "compacting2", "after1", "after2"]  # case 47
    assert res.from_hook is False and "## Goal" in res.summary  # case 46: the throwing hook is ignored


async def test_last_answer_wins_and_cancel_stops_the_chain() -> None:
    log: list[str] = []
    hooks = CompositeHooks(
        [
            Member("1", log, {"before": {"compaction": {"summary": "one"}}, "compacting": {"prompt": "p1"}}),
            Member("2", log, {"before": {"compaction": {"summary": "two"}}, "compacting": {"prompt": "p2"}}),
            Member("3", log, {"compacting": None}),
        ]
    )
    assert await hooks.before_compact({}) == {"compaction": {"summary": "two"}}
    assert await hooks.compacting({}) == {"prompt": "p2"}  # H-3: the last non-empty answer

    log.clear()
    hooks = CompositeHooks(
        [Member("1", log, {"tree": {"cancel": True}}), Member("2", log, {"tree": {"label": "x"}})]
    )
    assert await hooks.before_tree({}) == {"cancel": True}
    assert log == ["tree1"]  # H-2: later handlers are not called


async def test_timeouts_and_bad_answers_are_no_answer() -> None:
    errors: list[str] = []
    hooks = CompositeHooks(
        [Member("1", [], {"before": {"cancel": True}}), Member("2", [], {"before": "hang"})],
        timeout=0.05,
        on_error=lambda name, exc: errors.append(f"{name}:{type(exc).__name__}"),
    )
    assert await hooks.before_compact({}) == {"cancel": True}
    assert errors == []

    hooks.members.reverse()  # the hanging member first: it times out, the next one still answers
    assert await hooks.before_compact({}) == {"cancel": True}
    assert errors == ["before_compact:TimeoutError"]

    class Weird(Hooks):
        async def before_compact(self, event: dict[str, Any]) -> Any:
            return ["not", "an", "object"]

    assert await call_hook(Weird(), "before_compact", {}) is None
    assert await call_hook(None, "before_compact", {}) is None


async def test_cancelling_the_caller_is_not_swallowed() -> None:
    started = asyncio.Event()

    class Slow(Hooks):
        async def before_compact(self, event: dict[str, Any]) -> Any:
            started.set()
            await asyncio.sleep(3600)

    task = asyncio.create_task(call_hook(CompositeHooks([Slow()]), "before_compact", {}))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
