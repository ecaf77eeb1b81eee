"""Compaction of a session: manual, threshold and overflow (spec §8, §14.3, §14.6, §15.2–15.4).

One call does the whole job: prepare (pure, off the event loop), ask the hooks, generate the
summaries, write the `compaction` entry, rebuild the context, notify. Nothing is written before
the summary is complete: cancelling the task (asyncio cancellation) at any moment before the
write raises CancelledError, closes the model's HTTP streams and leaves the session — memory and
file — exactly as it was (D-21).

Decisions applied here:
- D-15: history and turn-prefix summaries of a split turn run in parallel under one scope; if
  either fails or the task is cancelled, both are stopped and nothing is written.
- D-20: the entry is never written between an assistant's tool calls and their results. If, when
  the summary is ready, the leaf is an assistant message whose tool calls do not all have results
  on the path yet, the write waits (polling the in-memory session, which the daemon appends to on
  the same event loop) until the results are there; the entry then lands after them. Entries
  appended meanwhile end up between the kept boundary and the compaction entry, i.e. kept.
  `tool_results_timeout` bounds the wait (the CLI passes 0: nobody will append).
- D-23: summaries are checked for their required headings (see `generation`).
- S-9 improvement: when a split turn has nothing before it in the window but there is a previous
  summary, that summary (without its file tags) stands in for the history part instead of
  `No prior history.` (Pi would drop it; oh-my-pi keeps it, S-10).
"""

from __future__ import annotations

import asyncio
import logging
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import Field

from ..compaction.prepare import CompactionPreparation, NoCompactionReason, messages_of, prepare_compaction
from ..compaction.prompts import (
    SPLIT_TURN_SEPARATOR,
    SUMMARIZATION_SYSTEM_PROMPT,
    SUMMARY_HEADINGS,
    TURN_PREFIX_HEADINGS,
    build_history_prompt,
    build_turn_prefix_prompt,
    finalize_summary,
    merge_split_turn,
)
from ..compaction.reports import preparation_json
from ..compaction.settings import CompactionSettings
from ..compaction.tokens import sum_estimates
from ..session import Session, build_session_context, convert_to_llm
from ..session.context import checkpoint_system_message, context_from_path
from ..summarize.base import SummarizationError, Summarizer, SummaryKind, SummaryRequest, usage_add
from ._model import EngineModel
from .busy import ensure_not_busy, mark_busy
from .generation import Generated, generate_checked, run_together
from .hooks import Hooks, call_hook
from .progress import OnProgress, ProgressTracker, emit
from .settings import Settings

__all__ = [
    "HISTORY_BUDGET_FRACTION",
    "TURN_PREFIX_BUDGET_FRACTION",
    "CompactionError",
    "CompactionResult",
    "Reason",
    "compact",
    "pending_tool_call_ids",
]

log = logging.getLogger(__name__)

Reason = Literal["manual", "threshold", "overflow"]

HISTORY_BUDGET_FRACTION = 0.8  # S-6: history summary output budget = 0.8 × reserveTokens
TURN_PREFIX_BUDGET_FRACTION = 0.5  # S-6: turn-prefix summary budget = 0.5 × reserveTokens
TOOL_RESULT_POLL_SECONDS = 0.02


class CompactionError(Exception):
    """A compaction that did not happen. `str(error)` is the spec's user-facing message;
    `code` says which case it is; `detail` is the message without the "Compaction failed: "
    prefix (auto-compaction words its own prefix, M-21)."""

    def __init__(self, message: str, code: str, detail: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.code = code  # already_compacted | nothing_to_compact | needs_migration | cancelled | failed
        self.detail = detail if detail is not None else message

    @classmethod
    def failed(cls, detail: str) -> CompactionError:
        return cls(f"Compaction failed: {detail}", "failed", detail)


class CompactionResult(EngineModel):
    summary: str
    first_kept_entry_id: str
    tokens_before: int | float
    estimated_tokens_after: int
    details: Any = None  # {readFiles, modifiedFiles}; a hook-supplied compaction may store anything
    usage: dict[str, Any] | None = None
    entry_id: str
    from_hook: bool = False
    warnings: list[str] = Field(default_factory=list)


# --- D-20 ---------------------------------------------------------------------------------------


def pending_tool_call_ids(session: Session) -> list[str]:
    """Tool calls of the assistant message at the end of the path that have no result on the path
    yet. Entries the model never sees (labels, model changes, ...) are looked through."""
    seen: set[Any] = set()
    current = session.get_leaf_entry()
    while current is not None:
        kind = current.get("type")
        if kind == "message":
            message = current.get("message") or {}
            role = message.get("role")
            if role == "toolResult":
                seen.add(message.get("toolCallId"))
            elif role == "assistant":
                if message.get("stopReason") in ("aborted", "error", "length"):
                    return []  # the agent does not run tools of a failed answer
                content = message.get("content")
                blocks = content if isinstance(content, list) else []
                return [
                    b.get("id")
                    for b in blocks
                    if isinstance(b, dict) and b.get("type") == "toolCall" and b.get("id") not in seen
                ]
            else:
                return []
        elif kind in ("custom_message", "branch_summary", "compaction"):
            return []
        parent = current.get("parentId")
        current = session.by_id.get(parent) if parent is not None else None
    return []


async def _wait_for_tool_results(
    session: Session, timeout: float | None, on_progress: OnProgress | None
) -> None:
    pending = pending_tool_call_ids(session)
    if not pending:
        return
    ids = ", ".join(str(i) for i in pending)
    if timeout is not None and timeout <= 0:
        raise CompactionError.failed(
            f"the last assistant message is still waiting for the results of tool calls {ids}; "
            "record them first (a compaction is never written between a tool call and its result)"
        )
    emit(on_progress, f"Waiting for the results of tool calls {ids} before writing the compaction")
    loop = asyncio.get_running_loop()
    deadline = None if timeout is None else loop.time() + timeout
    while pending_tool_call_ids(session):
        if deadline is not None and loop.time() >= deadline:
            raise CompactionError.failed(f"timed out waiting for the results of tool calls {ids}")
        await asyncio.sleep(TOOL_RESULT_POLL_SECONDS)


# --- preparation (off the loop) -----------------------------------------------------------------


@dataclass
class _Prepared:
    prep: CompactionPreparation
    path_ids: list[str]
    thinking_level: str
    preparation_json: dict[str, Any]
    history_messages: list[dict[str, Any]]
    prefix_messages: list[dict[str, Any]]


def _prepare(path: list[dict[str, Any]], settings: CompactionSettings) -> _Prepared | CompactionError:
    prep = prepare_compaction(path, settings)
    if not prep:
        assert not isinstance(prep, CompactionPreparation)
        code = prep.reason.value
        message = (
            prep.message
            if prep.reason != NoCompactionReason.NEEDS_MIGRATION
            else f"Compaction failed: {prep.message}"
        )
        return CompactionError(message, code, prep.message)
    assert isinstance(prep, CompactionPreparation)
    return _Prepared(
        prep=prep,
        path_ids=[e["id"] for e in path],
        thinking_level=context_from_path(path).thinking_level,
        preparation_json=preparation_json(prep),  # also computes the serialized conversation texts
        history_messages=convert_to_llm(messages_of(prep.messages_to_summarize)),
        prefix_messages=convert_to_llm(messages_of(prep.turn_prefix_messages)),
    )


# --- hooks ------------------------------------------------------------------------------------


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _supplied_compaction(obj: Any) -> dict[str, Any]:
    """H-7/H-8: a hook's own compaction is persisted as given, but it must at least be writable."""
    problem = None
    if not isinstance(obj, dict):
        problem = "expected an object"
    elif not isinstance(obj.get("summary"), str):
        problem = "'summary' must be a string"
    elif not isinstance(obj.get("firstKeptEntryId"), str) or not obj["firstKeptEntryId"]:
        problem = "'firstKeptEntryId' must be a non-empty string"
    elif not _number(obj.get("tokensBefore")):
        problem = "'tokensBefore' must be a number"
    elif obj.get("usage") is not None and not isinstance(obj.get("usage"), dict):
        problem = "'usage' must be an object"
    if problem is not None:
        raise CompactionError.failed(f"the before-compact hook returned an invalid compaction: {problem}")
    return obj


def _compacting_answer(answer: dict[str, Any] | None) -> tuple[str | None, list[str], Any]:
    """H-10: prompt (replaces the base prompt), context lines, preserveData."""
    if not answer:
        return None, [], None
    prompt = answer.get("prompt")
    prompt = prompt if isinstance(prompt, str) and prompt.strip() else None
    context = answer.get("context")
    lines = [str(x) for x in context if isinstance(x, str) and x.strip()] if isinstance(context, list) else []
    return prompt, lines, answer.get("preserveData")


# --- generation ---------------------------------------------------------------------------------


_TRAILING_FILE_TAGS = re.compile(r"(?:\n\n<(read-files|modified-files)>\n.*?\n</\1>)+\Z", re.DOTALL)


def _without_file_tags(summary: str | None) -> str | None:
    """A stored summary without its trailing file tags (the new summary gets fresh, cumulative ones)."""
    return _TRAILING_FILE_TAGS.sub("", summary) if summary else summary


def _split_join(has_history: bool) -> Callable[[list[str]], str]:
    def join(texts: list[str]) -> str:
        if has_history and len(texts) == 2:
            return texts[0] + (SPLIT_TURN_SEPARATOR + texts[1] if texts[1] else "")
        return "".join(texts)

    return join


async def _generate(
    prepared: _Prepared,
    settings: Settings,
    summarizer: Summarizer,
    custom_instructions: str | None,
    base_prompt: str | None,
    context_lines: list[str],
    on_progress: OnProgress | None,
) -> tuple[str, dict[str, Any] | None, list[str]]:
    prep = prepared.prep
    reserve = settings.compaction.reserve_tokens
    reasoning = prepared.thinking_level if prepared.thinking_level not in ("", "off") else None
    has_history = bool(prep.messages_to_summarize)
    split = prep.is_split_turn and bool(prep.turn_prefix_messages)
    count = len(prep.messages_to_summarize) + len(prep.turn_prefix_messages)
    tracker = ProgressTracker(on_progress, f"Summarizing {count} messages", join=_split_join(has_history))

    calls = []
    if has_history:
        request = SummaryRequest(
            kind=SummaryKind.HISTORY,
            system_prompt=SUMMARIZATION_SYSTEM_PROMPT,
            prompt=build_history_prompt(
                prep.conversation_text,
                previous_summary=prep.previous_summary,
                custom_instructions=custom_instructions,
                additional_context=context_lines,
                base_prompt=base_prompt,
            ),
            max_tokens=math.floor(HISTORY_BUDGET_FRACTION * reserve),
            reasoning=reasoning,
            messages=prepared.history_messages,
            previous_summary=prep.previous_summary,
            custom_instructions=custom_instructions,
        )
        # A hook-supplied prompt defines its own format: no heading check then.
        headings = () if base_prompt is not None else SUMMARY_HEADINGS
        calls.append(
            generate_checked(summarizer, request, headings=headings, tracker=tracker, label="history summary")
        )
    if split:
        request = SummaryRequest(
            kind=SummaryKind.TURN_PREFIX,
            system_prompt=SUMMARIZATION_SYSTEM_PROMPT,
            prompt=build_turn_prefix_prompt(prep.turn_prefix_text or ""),
            max_tokens=math.floor(TURN_PREFIX_BUDGET_FRACTION * reserve),
            reasoning=reasoning,
            messages=prepared.prefix_messages,
        )
        calls.append(
            generate_checked(
                summarizer,
                request,
                headings=TURN_PREFIX_HEADINGS,
                tracker=tracker,
                label="turn prefix summary",
            )
        )

    try:
        results: list[Generated] = await run_together(*calls)
    except SummarizationError as exc:
        raise CompactionError.failed(str(exc)) from exc
    except Exception as exc:  # a bug or an unexpected library error: report, never crash the daemon
        log.exception("summarization raised an unexpected error")
        raise CompactionError.failed(f"{type(exc).__name__}: {exc}") from exc

    history = results[0] if has_history else None
    prefix = results[-1] if split else None
    if prefix is not None:
        history_text = history.text if history is not None else _without_file_tags(prep.previous_summary)
        summary = merge_split_turn(history_text, prefix.text)
    else:
        assert history is not None
        summary = history.text
    usage = usage_add(history.usage if history else None, prefix.usage if prefix else None)
    warnings = [w for r in results for w in r.warnings]
    tracker.done("Summary generated", summary)
    return summary, usage, warnings


# --- the operation ------------------------------------------------------------------------------


async def _notify_after(hooks: Hooks | None, event: dict[str, Any]) -> None:
    """The entry is written: a cancellation arriving now cannot undo it, so the notification is
    finished in the background and the task reports success (the request did complete)."""
    if hooks is None:
        return
    task = asyncio.ensure_future(call_hook(hooks, "after_compact", event))
    try:
        await asyncio.shield(task)
    except asyncio.CancelledError:
        current = asyncio.current_task()
        if current is not None:
            current.uncancel()


def _int_if_integral(value: Any) -> Any:
    return int(value) if isinstance(value, float) and value.is_integer() else value


async def compact(
    session: Session,
    settings: Settings,
    summarizer: Summarizer,
    *,
    reason: Reason = "manual",
    custom_instructions: str | None = None,
    will_retry: bool = False,
    hooks: Hooks | None = None,
    on_progress: OnProgress | None = None,
    on_prepared: Callable[[CompactionPreparation], None] | None = None,
    tool_results_timeout: float | None = None,
) -> CompactionResult:
    """Compact the session at its leaf. Raises CompactionError ("Already compacted", "Nothing to
    compact (session too small)", "Compaction cancelled", "Compaction failed: <msg>"), BusyError,
    or CancelledError (nothing written). `on_prepared` is called once the preparation succeeded
    (auto-compaction emits compactionStart then, M-12)."""
    ensure_not_busy(session)
    path = session.get_branch()
    outcome = await asyncio.to_thread(_prepare, path, settings.compaction_settings())
    if isinstance(outcome, CompactionError):
        raise outcome
    prepared = outcome
    prep = prepared.prep
    if on_prepared is not None:
        on_prepared(prep)
    session_id = session.session_id
    instructions = custom_instructions if custom_instructions else None

    with mark_busy(session, "compaction in progress"):
        emit(on_progress, "Preparing compaction", "", 0)
        answer = await call_hook(
            hooks,
            "before_compact",
            {
                "sessionId": session_id,
                "preparation": prepared.preparation_json,
                "branchEntryIds": prepared.path_ids,
                "customInstructions": instructions,
                "reason": reason,
                "willRetry": will_retry,
            },
        )
        if answer is not None and answer.get("cancel"):
            raise CompactionError("Compaction cancelled", "cancelled")
        supplied = answer.get("compaction") if answer is not None else None

        warnings: list[str] = []
        if supplied is not None:
            fields = _supplied_compaction(supplied)
            summary: str = fields["summary"]
            first_kept: str = fields["firstKeptEntryId"]
            tokens_before = _int_if_integral(fields["tokensBefore"])
            details: Any = fields.get("details")
            usage: dict[str, Any] | None = fields.get("usage")
            preserve = fields.get("preserveData")
            from_hook = True
        else:
            compacting = await call_hook(
                hooks,
                "compacting",
                {
                    "sessionId": session_id,
                    "messages": [
                        {"role": m.message.get("role"), "entryId": m.entry_id}
                        for m in [*prep.messages_to_summarize, *prep.turn_prefix_messages]
                    ],
                },
            )
            base_prompt, context_lines, preserve = _compacting_answer(compacting)
            text, usage, warnings = await _generate(
                prepared, settings, summarizer, instructions, base_prompt, context_lines, on_progress
            )
            read_files, modified_files = prep.file_lists
            summary = finalize_summary(text, read_files, modified_files)  # S-12: lists by code only
            first_kept = prep.first_kept_entry_id
            tokens_before = _int_if_integral(prep.tokens_before)
            details = {"readFiles": read_files, "modifiedFiles": modified_files}
            from_hook = False

        await _wait_for_tool_results(session, tool_results_timeout, on_progress)
        if not from_hook and first_kept not in {e["id"] for e in session.get_branch()}:
            raise CompactionError.failed(
                "the session's leaf moved to another branch while summarizing; the summary no longer fits"
            )
        # No await between the checks above and the write: nothing can interleave.
        entry_id = session.append_compaction(
            summary,
            first_kept,
            tokens_before,
            details,
            from_hook,
            usage,
            preserveData=preserve,
            systemMessage=checkpoint_system_message(session.get_branch()),
        )

    entry = session.by_id[entry_id]
    context = build_session_context(session.entries, session.leaf_id, session.by_id)
    result = CompactionResult(
        summary=summary,
        first_kept_entry_id=first_kept,
        tokens_before=tokens_before,
        estimated_tokens_after=sum_estimates(context.messages),  # M-18 [PI-NEW]
        details=details,
        usage=usage,
        entry_id=entry_id,
        from_hook=from_hook,
        warnings=warnings,
    )
    emit(on_progress, "Compaction written", summary, 100)
    await _notify_after(
        hooks,
        {
            "sessionId": session_id,
            "compactionEntry": entry,
            "fromHook": from_hook,
            "reason": reason,
            "willRetry": will_retry,
        },
    )
    return result
