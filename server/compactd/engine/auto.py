"""The automatic compaction policy of one session (spec §14.1–14.4, M-1..M-23; D-7, D-11, D-19,
D-24). The daemon does not run the agent: it is told what the client appended and answers with
compactions plus advice for the client (retry with this context, or send a continue prompt).

When a check runs (`after_append`):
- an appended assistant message that ends a run (stopReason != "toolUse") is checked (M-1);
- an appended user message first checks the last assistant message before it, aborted ones
  included (M-2, the "pre-prompt" check).

The check (M-4..M-10): skipped when `compaction.enabled` is false; tool-output pruning runs first
when `pruning.enabled` (D-19, N-7); aborted answers are skipped at run end; answers not newer than
the latest compaction are stale (M-7, `<=` in ms, D-11); an overflow of the same model (M-8,
`compaction.overflow.is_context_overflow`) triggers overflow recovery; otherwise the threshold
(K-8) with the answer's usage minus pruning savings (N-8), or an estimate of the context when the
answer failed or reports zero usage (M-10 [PI-NEW]).

Overflow recovery (M-8/M-9): a silent overflow (stopReason "stop") compacts without a retry, and so
does an overflow found by the pre-prompt check (the new prompt follows; M-2). Any other is compacted
once with `willRetry: true` — the client should retry its request with the
rebuilt context minus the failed trailing assistant message (D-7: stopReason "error" or "length",
reported as `dropLastAssistant`/`droppedEntryId`; the message stays in the file). A second
overflow for the same input is not compacted again: the end event carries the one-shot message.
The "attempted" flag resets when a user message arrives and when an assistant message ends with
a stop reason other than "error".

No loops (D-24): when an automatic compaction leaves the context above the threshold, its end
event says so (`note`), carries no continue prompt, and threshold compaction stays off while that
compaction is the latest one on the path and compacting again could not get below the threshold
(the kept part alone is above it).

Events (through `on_event(name, payload)`): `compactionStart {reason}` once the preparation
succeeded (M-12 [PI-NEW]: earlier bail-outs are silent) and `compactionEnd {reason, result,
aborted, willRetry, errorMessage?, continuePrompt?, dropLastAssistant?, droppedEntryId?, note?}`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from pydantic import Field

from ..compaction.overflow import is_context_overflow
from ..compaction.omp import prepare_omp
from ..compaction.prepare import CompactionPreparation, prepare_compaction
from ..compaction.tokens import (
    calculate_context_tokens,
    compaction_threshold,
    estimate_context_tokens,
    should_compact,
)
from ..session import Session, build_session_context
from ..session.clock import iso_to_ms
from ..session.context import context_from_path, recent_path
from ..summarize.base import Summarizer
from ._model import EngineModel
from .compactor import CompactionError, CompactionResult, Reason, compact
from .hooks import Hooks
from .progress import OnProgress
from .pruner import PruneResult, prune
from .settings import Settings, context_window_for_model

__all__ = [
    "CONTINUE_PROMPT",
    "OVERFLOW_RETRY_EXHAUSTED",
    "AutoCompactor",
    "AutoOutcome",
    "OnEvent",
]

log = logging.getLogger(__name__)

OnEvent = Callable[[str, dict[str, Any]], None]

CONTINUE_PROMPT = "Continue if you have next steps."  # M-20 [OMP], seed 004
OVERFLOW_RETRY_EXHAUSTED = (
    "Context overflow recovery failed after one compact-and-retry attempt. "
    "Try reducing context or switching to a larger-context model."
)  # M-8


class AutoOutcome(EngineModel):
    """What one automatic check did. `reason` is None when only pruning happened."""

    reason: str | None = None
    result: CompactionResult | None = None
    aborted: bool = False
    will_retry: bool = False
    error_message: str | None = None
    continue_prompt: str | None = None
    drop_last_assistant: bool = False
    dropped_entry_id: str | None = None
    note: str | None = None
    pruned: PruneResult | None = None
    # D-7: the context (agent messages) the client should retry with after overflow recovery.
    # Not serialized (it can be the whole context); clients can ask for session/context.
    retry_messages: list[dict[str, Any]] | None = Field(default=None, exclude=True)


def _message(entry: dict[str, Any] | None) -> dict[str, Any] | None:
    if entry is None or entry.get("type") != "message":
        return None
    message = entry.get("message")
    return message if isinstance(message, dict) else None


def _latest_compaction(path: list[dict[str, Any]]) -> dict[str, Any] | None:
    for entry in reversed(path):
        if entry.get("type") == "compaction":
            return entry
    return None


def _timestamp_ms(value: Any) -> int:
    return iso_to_ms(value)


class AutoCompactor:
    """Per-session state of the policy: the overflow one-shot flag (M-8/M-9) and the D-24 guard.

    `context_window` is the agent model's context window; when None it is looked up from the
    session's current model id (`engine.settings.context_window_for_model`, 128000 when unknown)."""

    def __init__(self, *, context_window: int | None = None) -> None:
        self.context_window = context_window
        self.overflow_recovery_attempted = False
        # D-24: id of an automatic compaction that left the context above the threshold.
        self.ineffective_compaction_id: str | None = None

    # --- entry points ---------------------------------------------------------------------------

    async def after_append(
        self,
        session: Session,
        appended_entries: list[dict[str, Any]],
        settings: Settings,
        summarizer: Summarizer,
        hooks: Hooks | None = None,
        on_event: OnEvent | None = None,
        *,
        on_progress: OnProgress | None = None,
    ) -> AutoOutcome | None:
        """Run the check the appended entries call for (M-1/M-2). None = nothing happened."""
        last_message_entry: dict[str, Any] | None = None
        for entry in appended_entries:
            message = _message(entry)
            if message is None:
                continue
            last_message_entry = entry
            role = message.get("role")
            if role == "user" or role == "assistant" and message.get("stopReason") != "error":  # M-9
                self.overflow_recovery_attempted = False
        message = _message(last_message_entry)
        if last_message_entry is None or message is None:
            return None
        role = message.get("role")
        if role == "assistant" and message.get("stopReason") != "toolUse":
            return await self._check(
                session, last_message_entry, True, True, settings, summarizer, hooks, on_event, on_progress
            )
        if role == "user":
            assistant = self._last_assistant_before(session, last_message_entry["id"])
            if assistant is None:
                return None
            return await self._check(
                session, assistant, False, False, settings, summarizer, hooks, on_event, on_progress
            )
        return None

    async def report_overflow(
        self,
        session: Session,
        settings: Settings,
        summarizer: Summarizer,
        hooks: Hooks | None = None,
        on_event: OnEvent | None = None,
        *,
        error_message: str | None = None,
        on_progress: OnProgress | None = None,
    ) -> AutoOutcome | None:
        """The client's last request failed with a context overflow (whether or not it appended the
        failed answer): compact once and advise a retry (M-8). Runs even when automatic compaction
        is disabled, because the client asked for it."""
        if error_message:
            log.info("overflow reported for %s: %s", session.session_id, error_message)
        if self.overflow_recovery_attempted:
            return self._exhausted(on_event)
        self.overflow_recovery_attempted = True
        return await self._run(
            session, "overflow", True, False, settings, summarizer, hooks, on_event, on_progress, None
        )

    # --- the check ------------------------------------------------------------------------------

    @staticmethod
    def _last_assistant_before(session: Session, entry_id: str) -> dict[str, Any] | None:
        entry = session.get_entry(entry_id)
        parent = entry.get("parentId") if entry is not None else None
        current = session.by_id.get(parent) if parent is not None else None
        while current is not None:
            message = _message(current)
            if message is not None and message.get("role") == "assistant":
                return current
            parent = current.get("parentId")
            current = session.by_id.get(parent) if parent is not None else None
        return None

    def window_for(self, model_id: Any) -> int:
        """The agent model's context window (M-6)."""
        if self.context_window is not None:
            return self.context_window
        return context_window_for_model(model_id if isinstance(model_id, str) else None)

    async def _check(
        self,
        session: Session,
        entry: dict[str, Any],
        skip_aborted: bool,
        run_end: bool,
        settings: Settings,
        summarizer: Summarizer,
        hooks: Hooks | None,
        on_event: OnEvent | None,
        on_progress: OnProgress | None,
    ) -> AutoOutcome | None:
        if not settings.compaction.enabled:  # M-4
            return None
        pruned: PruneResult | None = None
        if settings.pruning.enabled:  # D-19/N-7: before anything else, aborted answers included
            try:
                result = prune(session, settings)
            except Exception:  # a failed rewrite must not block compaction; nothing was changed
                log.exception("tool-output pruning failed for %s", session.session_id)
            else:
                pruned = result if result.pruned_count else None
        quiet = AutoOutcome(pruned=pruned) if pruned is not None else None

        message = _message(entry) or {}
        stop_reason = message.get("stopReason")
        if skip_aborted and stop_reason == "aborted":  # M-5
            return quiet
        # Only the tail the context depends on (back to the latest compaction's kept entry): this
        # runs after every append, so it must not cost time proportional to the session's age.
        path = recent_path(session.by_id, session.leaf_id)
        context = context_from_path(path)
        model = context.model or {}
        window = self.window_for(model.get("modelId") or message.get("model"))
        same_model = message.get("provider") == model.get("provider") and message.get("model") == model.get(
            "modelId"
        )
        latest = _latest_compaction(path)
        latest_ms = _timestamp_ms(latest.get("timestamp")) if latest is not None else None
        message_ms = message.get("timestamp")
        if latest_ms is not None and isinstance(message_ms, (int, float)) and message_ms <= latest_ms:
            return quiet  # M-7 stale guard (D-11: <=)

        if same_model and is_context_overflow(message, window):  # M-8
            # A silent overflow (the answer completed) is compacted without a retry; so is an overflow
            # found before a new prompt (M-2): the prompt follows, there is nothing to retry.
            if stop_reason == "stop" or not run_end:
                skipped = self._skip_if_stuck(
                    path, latest, window, settings, pruned, "The context overflowed", settings.compat_for(session)
                )
                if skipped is not None:
                    return skipped
                return await self._run(
                    session,
                    "overflow",
                    False,
                    False,
                    settings,
                    summarizer,
                    hooks,
                    on_event,
                    on_progress,
                    pruned,
                )
            if self.overflow_recovery_attempted:
                outcome = self._exhausted(on_event)
                outcome.pruned = pruned
                return outcome
            self.overflow_recovery_attempted = True
            return await self._run(
                session, "overflow", True, False, settings, summarizer, hooks, on_event, on_progress, pruned
            )

        # M-10 threshold case
        usage = message.get("usage") if isinstance(message.get("usage"), dict) else None
        if stop_reason == "error" or usage is None or not calculate_context_tokens(usage):
            estimate = estimate_context_tokens(context.messages)
            if estimate.last_usage_index is None:
                return quiet  # no valid usage anywhere
            source = context.messages[estimate.last_usage_index]
            source_ms = source.get("timestamp")
            if (
                latest_ms is not None
                and source.get("role") == "assistant"
                and isinstance(source_ms, (int, float))
                and source_ms <= latest_ms
            ):
                return quiet  # the only usage predates the latest compaction (kept, stale)
            tokens = estimate.tokens
        else:
            tokens = calculate_context_tokens(usage)
            if pruned is not None:
                tokens = max(0, tokens - pruned.tokens_saved)  # N-8
        core = settings.compaction_settings()
        if not should_compact(tokens, window, core):
            return quiet
        skipped = self._skip_if_stuck(
            path, latest, window, settings, pruned, f"The context ({tokens} tokens) is above the threshold",
            settings.compat_for(session),
        )
        if skipped is not None:
            return skipped
        return await self._run(
            session, "threshold", False, run_end, settings, summarizer, hooks, on_event, on_progress, pruned
        )

    def _skip_if_stuck(
        self,
        path: list[dict[str, Any]],
        latest: dict[str, Any] | None,
        window: int,
        settings: Settings,
        pruned: PruneResult | None,
        what: str,
        compat: str = "pi",
    ) -> AutoOutcome | None:
        if not self._same_ineffective_state(path, latest, window, settings, compat):
            return None
        threshold = compaction_threshold(window, settings.compaction_settings())
        note = (
            f"Automatic compaction skipped: {what}, but the latest compaction could not bring it below "
            f"the threshold ({threshold}) and compacting again would keep the same state"
        )
        return AutoOutcome(pruned=pruned, note=note)

    def _same_ineffective_state(
        self, path: list[dict[str, Any]], latest: dict[str, Any] | None, window: int, settings: Settings,
        compat: str = "pi",
    ) -> bool:
        """D-24: the latest compaction was ineffective and compacting again cannot help."""
        if self.ineffective_compaction_id is None:
            return False
        if latest is None or latest.get("id") != self.ineffective_compaction_id:
            self.ineffective_compaction_id = None  # the state changed (new compaction / other branch)
            return False
        core = settings.compaction_settings()
        prep = prepare_omp(path, core) if compat == "omp" else prepare_compaction(path, core)  # D-29
        if not isinstance(prep, CompactionPreparation):
            return True
        threshold = compaction_threshold(window, settings.compaction_settings())
        return (
            prep.first_kept_entry_id == latest.get("firstKeptEntryId")
            or prep.estimated_tokens_after > threshold
        )

    def _exhausted(self, on_event: OnEvent | None) -> AutoOutcome:
        outcome = AutoOutcome(reason="overflow", error_message=OVERFLOW_RETRY_EXHAUSTED)
        _emit(on_event, "compactionEnd", _end_payload(outcome))
        return outcome

    # --- the run (M-11..M-21) -------------------------------------------------------------------

    async def _run(
        self,
        session: Session,
        reason: Reason,
        will_retry: bool,
        may_continue: bool,
        settings: Settings,
        summarizer: Summarizer,
        hooks: Hooks | None,
        on_event: OnEvent | None,
        on_progress: OnProgress | None,
        pruned: PruneResult | None,
    ) -> AutoOutcome:
        started = False

        def on_prepared(_prep: CompactionPreparation) -> None:
            nonlocal started
            started = True
            _emit(on_event, "compactionStart", {"reason": reason})

        outcome = AutoOutcome(reason=reason, will_retry=will_retry, pruned=pruned)
        try:
            result = await compact(
                session,
                settings,
                summarizer,
                reason=reason,
                will_retry=will_retry,
                hooks=hooks,
                on_progress=on_progress,
                on_prepared=on_prepared,
            )
        except asyncio.CancelledError:
            if started:
                outcome.aborted, outcome.will_retry = True, False
                _emit(on_event, "compactionEnd", _end_payload(outcome))
            raise
        except CompactionError as exc:
            outcome.will_retry = False
            if not started:  # M-12: nothing to prepare → silent (the note says why)
                outcome.note = exc.message
                return outcome
            if exc.code == "cancelled":  # M-14: a hook cancelled
                outcome.aborted = True
            else:  # M-21
                prefix = (
                    "Context overflow recovery failed" if reason == "overflow" else "Auto-compaction failed"
                )
                outcome.error_message = f"{prefix}: {exc.detail}"
            _emit(on_event, "compactionEnd", _end_payload(outcome))
            return outcome
        except Exception as exc:  # BusyError, file errors: report like a failure
            log.exception("auto-compaction of %s failed", session.session_id)
            outcome.will_retry = False
            if not started:
                outcome.note = str(exc)
                return outcome
            prefix = "Context overflow recovery failed" if reason == "overflow" else "Auto-compaction failed"
            outcome.error_message = f"{prefix}: {exc}"
            _emit(on_event, "compactionEnd", _end_payload(outcome))
            return outcome

        outcome.result = result
        window = self._window_after(session)
        core = settings.compaction_settings()
        threshold = compaction_threshold(window, core)
        effective = result.estimated_tokens_after <= threshold
        if effective:
            self.ineffective_compaction_id = None
        else:  # D-24
            self.ineffective_compaction_id = result.entry_id
            outcome.note = (
                f"The context is still above the compaction threshold after compacting "
                f"({result.estimated_tokens_after} > {threshold} tokens); automatic compaction will "
                "not run again until that changes"
            )
        if will_retry:
            self._advise_retry(session, outcome)
        elif may_continue and reason == "threshold" and settings.compaction.auto_continue and effective:
            outcome.continue_prompt = CONTINUE_PROMPT
        _emit(on_event, "compactionEnd", _end_payload(outcome))
        return outcome

    def _window_after(self, session: Session) -> int:
        model = context_from_path(recent_path(session.by_id, session.leaf_id)).model or {}
        return self.window_for(model.get("modelId"))

    @staticmethod
    def _advise_retry(session: Session, outcome: AutoOutcome) -> None:
        """D-7: the retry must not include the failed trailing answer (error or length)."""
        context = build_session_context(session.entries, session.leaf_id, session.by_id)
        messages = list(context.messages)
        if messages:
            last = messages[-1]
            if last.get("role") == "assistant" and last.get("stopReason") in ("error", "length"):
                outcome.drop_last_assistant = True
                outcome.dropped_entry_id = context.entry_ids[-1]
                messages.pop()
        outcome.retry_messages = messages


def _emit(on_event: OnEvent | None, name: str, payload: dict[str, Any]) -> None:
    if on_event is not None:
        try:
            on_event(name, payload)
        except Exception:  # a broken listener must not break the compaction
            log.exception("compaction event listener failed")


def _end_payload(outcome: AutoOutcome) -> dict[str, Any]:
    payload: dict[str, Any] = {
        "reason": outcome.reason,
        "result": outcome.result.to_json() if outcome.result is not None else None,
        "aborted": outcome.aborted,
        "willRetry": outcome.will_retry,
    }
    if outcome.error_message is not None:
        payload["errorMessage"] = outcome.error_message
    if outcome.continue_prompt is not None:
        payload["continuePrompt"] = outcome.continue_prompt
    if outcome.drop_last_assistant:
        payload["dropLastAssistant"] = True
        payload["droppedEntryId"] = outcome.dropped_entry_id
    if outcome.note is not None:
        payload["note"] = outcome.note
    return payload
