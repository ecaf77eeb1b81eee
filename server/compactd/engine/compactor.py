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
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import Field

from ..compaction.chunking import (
    ChunkingError,
    WindowFit,
    chunk_budget,
    fit_request,
    output_room,
    plan_chunks,
    usable_window,
)
from ..compaction import omp
from ..compaction.exact_tokens import get_counter
from ..compaction.figures import context_estimate
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
from ..compaction.serialize import serialize_conversation
from ..compaction.settings import CompactionSettings
from ..compaction.tokens import sum_estimates
from ..session import Session, build_session_context, convert_to_llm
from ..session.context import checkpoint_system_message, context_from_path
from ..summarize.base import (
    ContextOverflowError,
    SummarizationError,
    Summarizer,
    SummaryKind,
    SummaryRequest,
    usage_add,
)
from ..summarize.extractive import ExtractiveSummarizer
from ._model import EngineModel
from .busy import ensure_not_busy, mark_busy
from .generation import Generated, generate_checked, run_limited
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
    # Requests that reached a model (0: the embedded summarizer wrote it, or a hook supplied it).
    model_calls: int = 0
    compat: str = "pi"  # D-29: whose semantics prepared and wrote it ("pi" | "omp")


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


def _prepare(path: list[dict[str, Any]], settings: CompactionSettings, compat: str = "pi") -> _Prepared | CompactionError:
    prep = omp.prepare_omp(path, settings) if compat == "omp" else prepare_compaction(path, settings)
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
    context = context_from_path(path)
    return _Prepared(
        prep=prep,
        path_ids=[e["id"] for e in path],
        thinking_level=context.thinking_level,
        # (also computes the serialized conversation texts)
        preparation_json=preparation_json(prep, context_tokens=context_estimate(context.messages)),
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


@dataclass
class _Calls:
    """What every summary call of one compaction shares."""

    settings: Settings
    summarizer: Summarizer
    fallback: Summarizer | None  # writes the summary when the model's lacks headings (D-23)
    tracker: ProgressTracker
    reasoning: str | None
    custom_instructions: str | None
    base_prompt: str | None
    context_lines: list[str]
    window: int | None  # the summarizer model's context window, None = unknown (no check)
    warnings: list[str] = field(default_factory=list)

    @property
    def headings(self) -> tuple[str, ...]:
        # A hook-supplied prompt defines its own format: no heading check then.
        return () if self.base_prompt is not None else SUMMARY_HEADINGS

    async def count(self, text: str) -> int:
        counter = get_counter(self.settings.model)
        return await asyncio.to_thread(counter.count_text, text)

    async def fit(self, request: SummaryRequest) -> WindowFit:
        """`request` against the window (which must be known). A prompt whose UTF-8 size (an upper
        bound of its token count) leaves the whole output budget free needs no counting."""
        assert self.window
        text = request.system_prompt + request.prompt
        if usable_window(self.window) - len(text.encode("utf-8")) >= request.max_tokens:
            return WindowFit(True, request.max_tokens)
        return fit_request(await self.count(text), request.max_tokens, self.window)

    def history_request(
        self, conversation: str, previous: str | None, messages: list[dict[str, Any]], max_tokens: int, parallel: bool
    ) -> SummaryRequest:
        return SummaryRequest(
            kind=SummaryKind.HISTORY,
            system_prompt=SUMMARIZATION_SYSTEM_PROMPT,
            prompt=build_history_prompt(
                conversation,
                previous_summary=previous,
                custom_instructions=self.custom_instructions,
                additional_context=self.context_lines,
                base_prompt=self.base_prompt,
            ),
            max_tokens=max_tokens,
            reasoning=self.reasoning,
            messages=messages,
            previous_summary=previous,
            custom_instructions=self.custom_instructions,
            parallel=parallel,
        )

    async def checked(
        self, request: SummaryRequest, headings: tuple[str, ...], label: str, budget: int | None = None
    ) -> Generated:
        return await generate_checked(
            self.summarizer,
            request,
            headings=headings,
            tracker=self.tracker,
            label=label,
            budget=budget,
            fallback=self.fallback,
            strict=self.settings.summarizer.strict_headings,
        )


async def _summarize_history(
    calls: _Calls, prepared: _Prepared, parallel: bool, with_prefix: bool = False
) -> Generated:
    """The history summary: one request when it fits the summarizer's window, else in chunks.
    An overflow the server reports although the check passed (its tokenizer counts more) is
    answered once by chunking for the window it names (a quarter less when that is the window we
    already planned for); an overflow that names no window fails with the server's words."""
    prep = prepared.prep
    max_tokens = math.floor(HISTORY_BUDGET_FRACTION * calls.settings.compaction.reserve_tokens)
    messages = prepared.history_messages + (prepared.prefix_messages if with_prefix else [])
    if with_prefix:  # the split turn's first part is summarized as history (it did not fit alone)
        assert calls.window
        return await _summarize_in_chunks(calls, messages, prep.previous_summary, calls.window, max_tokens, parallel)
    request = calls.history_request(prep.conversation_text, prep.previous_summary, messages, max_tokens, parallel)
    if calls.window:
        fit = await calls.fit(request)
        if not fit.fits:
            return await _summarize_in_chunks(calls, messages, prep.previous_summary, calls.window, max_tokens, parallel)
        request = request.model_copy(update={"max_tokens": fit.max_tokens})
    try:
        return await calls.checked(request, calls.headings, "history summary", max_tokens)
    except ContextOverflowError as err:
        window = err.context_window
        if window is None and "summarizer.contextWindow" in str(err):  # the hint is there already
            raise
        if window is None:  # e.g. llama.cpp's older text names no size: nothing to plan with
            raise ContextOverflowError(
                f"{err} (set summarizer.contextWindow to the server's context size, e.g. llama.cpp's --ctx-size, "
                "and compactd will summarize the history in chunks that fit)"
            ) from err
        if calls.window and window >= calls.window:  # the server's tokenizer counts more than ours
            window = math.floor(calls.window * 0.75)
        calls.warnings.append(
            f"The summarizer's server reported a context overflow ({err}); the history was summarized again "
            f"in chunks sized for a {window}-token window"
        )
        try:
            return await _summarize_in_chunks(calls, messages, prep.previous_summary, window, max_tokens, parallel)
        except ContextOverflowError as again:
            raise ContextOverflowError(f"{again} (after the server reported: {err})", again.context_window) from again


async def _summarize_in_chunks(
    calls: _Calls,
    messages: list[dict[str, Any]],
    previous_summary: str | None,
    window: int,
    max_tokens: int,
    parallel: bool,
) -> Generated:
    """Oldest chunk first; each answer becomes the next chunk's `<previous-summary>` (update prompt)."""
    texts = await asyncio.to_thread(lambda: [serialize_conversation([m]) for m in messages])
    counter = get_counter(calls.settings.model)
    tokens = await asyncio.to_thread(lambda: [counter.count_text(t) for t in texts])
    # The prompt around the conversation, in its update form (the larger one).
    frame = calls.history_request("", "-", [], max_tokens, parallel)
    fixed = await calls.count(frame.system_prompt + frame.prompt)
    summary_tokens = await calls.count(previous_summary or "")
    try:
        budget = chunk_budget(window, fixed, summary_tokens, max_tokens)
    except ChunkingError as exc:
        raise SummarizationError(f"Summarization failed: {exc}") from exc
    chunks = await asyncio.to_thread(plan_chunks, texts, tokens, budget)
    out = output_room(window, max_tokens)
    running = previous_summary
    usage: dict[str, Any] | None = None
    warnings = [
        f"The history ({sum(tokens)} tokens) does not fit the summarizer's context window ({window} tokens): "
        f"it was summarized in {len(chunks)} parts, oldest first"
    ]
    model_calls = 0
    for number, chunk in enumerate(chunks, 1):
        calls.tracker.note(f"Summarizing the history in {len(chunks)} parts: part {number}")
        request = calls.history_request(chunk.text, running, messages[chunk.start : chunk.end], out, parallel)
        generated = await calls.checked(request, calls.headings, "history summary")
        running = generated.text
        usage = usage_add(usage, generated.usage)
        warnings += generated.warnings
        model_calls += generated.model_calls
    if running is None:  # no message had text to show
        raise SummarizationError("Summarization failed: the history has no text to summarize")
    return Generated(running, usage, warnings, attempts=len(chunks), model_calls=model_calls)


def _prefix_request(calls: _Calls, prepared: _Prepared, parallel: bool) -> SummaryRequest:
    return SummaryRequest(
        kind=SummaryKind.TURN_PREFIX,
        system_prompt=SUMMARIZATION_SYSTEM_PROMPT,
        prompt=build_turn_prefix_prompt(prepared.prep.turn_prefix_text or ""),
        max_tokens=math.floor(TURN_PREFIX_BUDGET_FRACTION * calls.settings.compaction.reserve_tokens),
        reasoning=calls.reasoning,
        messages=prepared.prefix_messages,
        parallel=parallel,
    )


async def _prefix_fits(calls: _Calls, prepared: _Prepared) -> bool:
    return (await calls.fit(_prefix_request(calls, prepared, False))).fits


async def _summarize_prefix(calls: _Calls, prepared: _Prepared, parallel: bool) -> Generated:
    request = _prefix_request(calls, prepared, parallel)
    max_tokens = request.max_tokens
    if calls.window:  # it fits (checked before, see _generate): only the output budget is capped
        request = request.model_copy(update={"max_tokens": (await calls.fit(request)).max_tokens})
    return await calls.checked(request, TURN_PREFIX_HEADINGS, "turn prefix summary", max_tokens)


async def _generate(
    prepared: _Prepared,
    settings: Settings,
    summarizer: Summarizer,
    custom_instructions: str | None,
    base_prompt: str | None,
    context_lines: list[str],
    on_progress: OnProgress | None,
) -> tuple[str, dict[str, Any] | None, list[str], int]:
    """Summary text, usage, warnings and the number of model calls."""
    prep = prepared.prep
    has_history = bool(prep.messages_to_summarize)
    split = prep.is_split_turn and bool(prep.turn_prefix_messages)
    count = len(prep.messages_to_summarize) + len(prep.turn_prefix_messages)
    tracker = ProgressTracker(on_progress, f"Summarizing {count} messages", join=_split_join(has_history))
    calls = _Calls(
        settings=settings,
        summarizer=summarizer,
        fallback=None if isinstance(summarizer, ExtractiveSummarizer) else ExtractiveSummarizer(),
        tracker=tracker,
        reasoning=prepared.thinking_level if prepared.thinking_level not in ("", "off") else None,
        custom_instructions=custom_instructions,
        base_prompt=base_prompt,
        context_lines=context_lines,
        window=getattr(summarizer, "context_window", None),
    )

    if split and calls.window and not await _prefix_fits(calls, prepared):
        # Too large alone: the first part of the turn is summarized with the history, in chunks.
        calls.warnings.append(
            f"The first part of the split turn does not fit the summarizer's context window ({calls.window} tokens); "
            "it was summarized together with the history"
        )
        split, has_history, fold_prefix = False, True, True
    else:
        fold_prefix = False

    jobs: list[Callable[[bool], Awaitable[Generated]]] = []
    labels: list[str] = []
    if has_history:
        jobs.append(lambda parallel: _summarize_history(calls, prepared, parallel, with_prefix=fold_prefix))
        labels.append("history summary")
    if split:
        jobs.append(lambda parallel: _summarize_prefix(calls, prepared, parallel))
        labels.append("turn prefix summary")

    def cut_off(index: int, err: Exception) -> None:
        tracker.note(f"The server cut off the parallel {labels[index]}; running it again alone")
        calls.warnings.append(
            f"The server cut off the {labels[index]} while another call was running ({err}); it was run again "
            "alone (set summarizer.maxConcurrency to 1 for a single-slot server)"
        )

    try:
        results = await run_limited(jobs, settings.summarizer.max_concurrency, on_sequential_retry=cut_off)
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
    warnings = calls.warnings + [w for r in results for w in r.warnings]
    tracker.done("Summary generated", summary)
    return summary, usage, warnings, sum(r.model_calls for r in results)


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


def _append_omp_compaction(
    session: Session, prep: CompactionPreparation, supplied: Any, summary: str, first_kept: str,
    tokens_before: Any, details: Any, from_hook: bool, preserve: Any,
) -> str:
    """D-29: on oh-my-pi's files the entry is written as oh-my-pi writes its own (OMP-60..OMP-64),
    so oh-my-pi shows its short summary and before→after figures and reads it as its own."""
    if from_hook:
        short = supplied.get("shortSummary") if isinstance(supplied.get("shortSummary"), str) else None
        after = None
    else:
        short = omp.short_summary(summary)
        after = omp.tokens_after(summary, tokens_before, (m for _, m in prep.kept))
    fields = omp.compaction_fields(
        summary=summary, short=short, first_kept_entry_id=first_kept, tokens_before=tokens_before,
        tokens_after_value=after, details=details, from_extension=from_hook, preserve_data=preserve,
    )
    # Session.append_compaction writes Pi's shape (fromHook, usage, systemMessage); the generic
    # append keeps exactly these fields, in this order, after type/id/parentId/timestamp.
    return session._append(fields)


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
    settings.check_reserve("compaction")  # SettingsError before anything is prepared or asked
    path = session.get_branch()
    compat = settings.compat_for(session)
    outcome = await asyncio.to_thread(_prepare, path, settings.compaction_settings(), compat)
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
            model_calls = 0
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
            text, usage, warnings, model_calls = await _generate(
                prepared, settings, summarizer, instructions, base_prompt, context_lines, on_progress
            )
            read_files, modified_files = prep.file_lists
            if compat == "omp":  # OMP-34: one `<files>` block, not Pi's two tags
                summary = omp.upsert_files_block(text, prep.file_ops)
            else:
                summary = finalize_summary(text, read_files, modified_files)  # S-12: lists by code only
            first_kept = prep.first_kept_entry_id
            tokens_before = _int_if_integral(prep.tokens_before)
            details = {"readFiles": read_files, "modifiedFiles": modified_files}
            from_hook = False

        await _wait_for_tool_results(session, tool_results_timeout, on_progress)
        if first_kept not in {e["id"] for e in session.get_branch()}:
            if from_hook:  # stored as given, the context would be the summary alone
                raise CompactionError.failed(
                    f"the before-compact hook's compaction keeps from entry {first_kept!r}, which is not on the "
                    "session's current branch (firstKeptEntryId must name one of branchEntryIds); nothing was written"
                )
            raise CompactionError.failed(
                "the session's leaf moved to another branch while summarizing; the summary no longer fits"
            )
        # No await between the checks above and the write: nothing can interleave.
        if compat == "omp":
            entry_id = _append_omp_compaction(session, prep, supplied, summary, first_kept, tokens_before,
                                              details, from_hook, preserve)
        else:
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
        model_calls=model_calls,
        compat=compat,
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
