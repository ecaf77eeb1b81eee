"""Extension points around compaction and tree navigation (spec §15, H-1..H-14).

A `Hooks` object answers five events. Every method is async; returning None means "no answer"
(the default behaviour continues). The daemon implements them by asking the client
(`session/beforeCompact`, ...); tests and embedders subclass `Hooks` directly.

The engine never calls a hook method directly: it goes through `call_hook`, which turns an
exception or a timeout into "no answer" (H-4: a broken extension must not break compaction) and
logs it. Cancellation of the calling task is never swallowed.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from typing import Any, Literal

__all__ = ["CompositeHooks", "HookErrorHandler", "HookName", "Hooks", "call_hook"]

log = logging.getLogger(__name__)

HookName = Literal["before_compact", "compacting", "after_compact", "before_tree", "after_tree"]
HookErrorHandler = Callable[[str, BaseException], None]

# Events whose answer matters; the other two are notifications (H-5).
_ANSWERING = ("before_compact", "compacting", "before_tree")


class Hooks:
    """Base class: every event is answered with "no answer"."""

    async def before_compact(self, event: dict[str, Any]) -> dict[str, Any] | None:
        """{sessionId, preparation, branchEntryIds, customInstructions, reason, willRetry}
        -> {"cancel": True} | {"compaction": {summary, firstKeptEntryId, tokensBefore, details?, usage?}}"""
        return None

    async def compacting(self, event: dict[str, Any]) -> dict[str, Any] | None:
        """{sessionId, messages: [{role, entryId}]} -> {prompt?, context?: [str], preserveData?}"""
        return None

    async def after_compact(self, event: dict[str, Any]) -> None:
        """{sessionId, compactionEntry, fromHook, reason, willRetry}"""
        return

    async def before_tree(self, event: dict[str, Any]) -> dict[str, Any] | None:
        """{sessionId, preparation} -> {cancel?, summary?: {summary, details?}, customInstructions?,
        replaceInstructions?, label?}"""
        return None

    async def after_tree(self, event: dict[str, Any]) -> None:
        """{sessionId, newLeafId, oldLeafId, summaryEntryId?, fromHook?}"""
        return


async def call_hook(
    hooks: Hooks | None,
    name: HookName,
    event: dict[str, Any],
    *,
    timeout: float | None = None,
    on_error: HookErrorHandler | None = None,
) -> dict[str, Any] | None:
    """Call one hook method; an exception, a timeout or a non-dict answer counts as no answer."""
    if hooks is None:
        return None
    method = getattr(hooks, name)
    try:
        if timeout is not None:
            async with asyncio.timeout(timeout):
                answer = await method(event)
        else:
            answer = await method(event)
    except asyncio.CancelledError:
        # A timeout surfaces as TimeoutError; a bare CancelledError is our own task being cancelled.
        raise
    except Exception as exc:  # H-4: report and carry on with the default behaviour
        if isinstance(exc, TimeoutError):
            log.warning("hook %s timed out after %ss; treated as no answer", name, timeout)
        else:
            log.warning("hook %s failed: %s", name, exc, exc_info=exc)
        if on_error is not None:
            on_error(name, exc)
        return None
    if name not in _ANSWERING:
        return None
    if answer is None:
        return None
    if not isinstance(answer, dict):
        log.warning("hook %s returned %s, expected an object; ignored", name, type(answer).__name__)
        return None
    return answer or None  # an empty object is "no answer" too


class CompositeHooks(Hooks):
    """Several hook sets run in order (H-1). For before_compact/before_tree each non-empty answer
    replaces the running result and a `cancel` stops at once (H-2); for compacting the last
    non-empty answer wins (H-3); notifications go to everyone (H-5). Each member is guarded:
    one that raises or times out counts as no answer (H-4)."""

    def __init__(
        self,
        members: Sequence[Hooks],
        *,
        timeout: float | None = None,
        on_error: HookErrorHandler | None = None,
    ) -> None:
        self.members = list(members)
        self.timeout = timeout
        self.on_error = on_error

    async def _answer(self, name: HookName, event: dict[str, Any]) -> dict[str, Any] | None:
        result: dict[str, Any] | None = None
        for member in self.members:
            answer = await call_hook(member, name, event, timeout=self.timeout, on_error=self.on_error)
            if answer is None:
                continue
            result = answer
            if name != "compacting" and answer.get("cancel"):
                break
        return result

    async def _notify(self, name: HookName, event: dict[str, Any]) -> None:
        for member in self.members:
            await call_hook(member, name, event, timeout=self.timeout, on_error=self.on_error)

    async def before_compact(self, event: dict[str, Any]) -> dict[str, Any] | None:
        return await self._answer("before_compact", event)

    async def compacting(self, event: dict[str, Any]) -> dict[str, Any] | None:
        return await self._answer("compacting", event)

    async def after_compact(self, event: dict[str, Any]) -> None:
        await self._notify("after_compact", event)

    async def before_tree(self, event: dict[str, Any]) -> dict[str, Any] | None:
        return await self._answer("before_tree", event)

    async def after_tree(self, event: dict[str, Any]) -> None:
        await self._notify("after_tree", event)
