"""Tree navigation with optional branch summaries (spec §12.3–12.4, B-9..B-27, §15.5–15.6).

`navigate` moves the session's leaf to a target entry. When asked, the branch being left behind
is summarized and the summary is attached as a child of the arrival position, becoming the new
leaf (D-4); its `fromId` is the entry the user navigated away from (D-5).

While the summary is generated the session is marked busy, so another leaf move is refused
(D-20). Cancelling the task before anything is written (during the before-tree hook or the
summary) ends the navigation with `{cancelled: true, aborted: true}` and the session unchanged
(B-21/B-27): the cancellation is absorbed and reported in the result, like Pi's abort of a branch
summary. Once entries are written, the navigation completes.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from pydantic import Field

from ..compaction.branch import (
    branch_token_budget,
    collect_entries_for_branch_summary,
    prepare_branch_entries,
)
from ..compaction import omp
from ..compaction.prepare import messages_of
from ..compaction.prompts import (
    BRANCH_SUMMARY_HEADINGS,
    BRANCH_SUMMARY_PREAMBLE,
    NO_BRANCH_CONTENT,
    NO_SUMMARY_GENERATED,
    SUMMARIZATION_SYSTEM_PROMPT,
    build_branch_prompt,
    finalize_branch_summary,
)
from ..compaction.serialize import serialize_messages
from ..session import EntryNotFoundError, Session, convert_to_llm
from ..session.context import context_from_path
from ..summarize.base import SummarizationError, Summarizer, SummaryKind, SummaryRequest
from ..summarize.extractive import ExtractiveSummarizer
from ._model import EngineModel
from .busy import ensure_not_busy, mark_busy
from .generation import generate_checked
from .hooks import Hooks, call_hook
from .progress import OnProgress, ProgressTracker, emit
from .settings import Settings

__all__ = [
    "BRANCH_SUMMARY_MAX_TOKENS",
    "EntryNotFoundError",
    "NavigateResult",
    "NavigationError",
    "editor_text_of",
    "navigate",
]

log = logging.getLogger(__name__)

BRANCH_SUMMARY_MAX_TOKENS = 2048  # B-12: fixed output budget of a branch summary


class NavigationError(Exception):
    """A navigation that could not be done; `str(error)` is the user-facing message."""


class NavigateResult(EngineModel):
    cancelled: bool = False
    aborted: bool = False
    editor_text: str | None = None
    summary_entry_id: str | None = None
    new_leaf_id: str | None = None
    old_leaf_id: str | None = None
    warnings: list[str] = Field(default_factory=list)


def _blocks_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            b["text"]
            for b in content
            if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)
        )
    return ""


def editor_text_of(entry: dict[str, Any]) -> str | None:
    """B-22: text to put back in the editor when navigating to a user message or custom message."""
    if entry.get("type") == "message":
        message = entry.get("message") or {}
        if message.get("role") == "user":
            return _blocks_text(message.get("content"))
        return None
    if entry.get("type") == "custom_message":
        return _blocks_text(entry.get("content"))
    return None


def _new_leaf(target: dict[str, Any]) -> tuple[str | None, str | None]:
    """B-22: (new leaf, editor text). A user or custom message is re-edited, so the leaf goes to
    its parent; anything else becomes the leaf itself."""
    text = editor_text_of(target)
    if text is not None:
        return target.get("parentId"), text
    return target["id"], None


def _aborted(old_leaf: str | None) -> NavigateResult:
    current = asyncio.current_task()
    if current is not None:
        current.uncancel()  # the cancellation is answered by the result itself
    return NavigateResult(cancelled=True, aborted=True, new_leaf_id=old_leaf, old_leaf_id=old_leaf)


async def navigate(
    session: Session,
    target_id: str,
    settings: Settings,
    summarizer: Summarizer | None,
    *,
    summarize: bool = False,
    custom_instructions: str | None = None,
    replace_instructions: bool = False,
    label: str | None = None,
    hooks: Hooks | None = None,
    on_progress: OnProgress | None = None,
) -> NavigateResult:
    old_leaf = session.leaf_id
    if target_id == old_leaf:  # B-15: a no-op, no events
        return NavigateResult(new_leaf_id=old_leaf, old_leaf_id=old_leaf)
    if summarize and summarizer is None:
        raise NavigationError("No model available for summarization")  # B-16
    target = session.get_entry(target_id)
    if target is None:
        raise EntryNotFoundError(target_id)
    ensure_not_busy(session)

    collection = collect_entries_for_branch_summary(session.by_id, old_leaf, target_id)  # B-17
    preparation = {
        "targetId": target_id,
        "oldLeafId": old_leaf,
        "commonAncestorId": collection.common_ancestor_id,
        "entryIds": collection.entry_ids,
        "userWantsSummary": bool(summarize),
        "customInstructions": custom_instructions,
        "replaceInstructions": bool(replace_instructions),
        "label": label,
    }

    summary_text: str | None = None
    details: Any = None
    usage: dict[str, Any] | None = None
    from_hook = False
    warnings: list[str] = []
    with mark_busy(session, "branch summarization in progress"):
        try:
            answer = await call_hook(
                hooks, "before_tree", {"sessionId": session.session_id, "preparation": preparation}
            )
            if answer is not None and answer.get("cancel"):
                return NavigateResult(cancelled=True, new_leaf_id=old_leaf, old_leaf_id=old_leaf)  # B-20
            if answer is not None:  # B-20: overrides, only for keys that are present
                if "customInstructions" in answer:
                    custom_instructions = answer["customInstructions"]
                if "replaceInstructions" in answer:
                    replace_instructions = bool(answer["replaceInstructions"])
                if "label" in answer:
                    label = answer["label"]
            supplied = answer.get("summary") if answer is not None and summarize else None
            if isinstance(supplied, dict) and isinstance(supplied.get("summary"), str):
                summary_text = supplied["summary"]
                details = supplied.get("details")
                from_hook = True
            elif supplied is not None:
                log.warning("before-tree hook returned a summary without a 'summary' string; ignored")
            if summarize and not from_hook and collection.entries:  # B-21
                summary_text, details, usage, warnings = await _summarize_branch(
                    session,
                    collection.entries,
                    settings,
                    summarizer,
                    custom_instructions,
                    replace_instructions,
                    on_progress,
                )
        except asyncio.CancelledError:
            return _aborted(old_leaf)

        # B-22/B-23: no await from here to the end of the writes.
        new_leaf, editor_text = _new_leaf(target)
        summary_id: str | None = None
        if summary_text is not None:
            summary_id = session.branch_with_summary(
                new_leaf, summary_text, details, from_hook, usage, from_id=old_leaf
            )
            if label:
                session.append_label_change(summary_id, label)
        else:
            if new_leaf is None:
                session.reset_leaf()
            else:
                session.branch(new_leaf)
            if label:
                session.append_label_change(target_id, label)

    emit(on_progress, "Navigation complete", summary_text or "", 100)
    event: dict[str, Any] = {
        "sessionId": session.session_id,
        "newLeafId": session.leaf_id,
        "oldLeafId": old_leaf,
    }
    if summary_id is not None:
        event["summaryEntryId"] = summary_id
        event["fromHook"] = from_hook
    await _notify_after(hooks, event)
    return NavigateResult(
        editor_text=editor_text,
        summary_entry_id=summary_id,
        new_leaf_id=session.leaf_id,
        old_leaf_id=old_leaf,
        warnings=warnings,
    )


async def _notify_after(hooks: Hooks | None, event: dict[str, Any]) -> None:
    """The leaf already moved; finish the notification even if the task is cancelled now."""
    if hooks is None:
        return
    task = asyncio.ensure_future(call_hook(hooks, "after_tree", event))
    try:
        await asyncio.shield(task)
    except asyncio.CancelledError:
        current = asyncio.current_task()
        if current is not None:
            current.uncancel()


async def _summarize_branch(
    session: Session,
    entries: list[dict[str, Any]],
    settings: Settings,
    summarizer: Summarizer | None,
    custom_instructions: str | None,
    replace_instructions: bool,
    on_progress: OnProgress | None,
) -> tuple[str, dict[str, Any], dict[str, Any] | None, list[str]]:
    """B-9..B-14. Returns (summary, details, usage, warnings)."""
    assert summarizer is not None
    settings.check_reserve("branchSummary")
    budget = branch_token_budget(settings.context_window, settings.branch_summary.reserve_tokens)  # B-9
    omp_file = settings.compat_for(session) == "omp"  # D-29: oh-my-pi's collection, transcript, `<files>`
    prepare = omp.prepare_branch_entries_omp if omp_file else prepare_branch_entries
    prep = await asyncio.to_thread(prepare, entries, budget)
    read_files, modified_files = prep.file_lists
    details = {"readFiles": read_files, "modifiedFiles": modified_files}
    if not prep.messages:
        return NO_BRANCH_CONTENT, details, None, []  # B-10

    messages = messages_of(prep.messages)
    conversation = await asyncio.to_thread(omp.serialize_for_summary if omp_file else serialize_messages, messages)
    thinking = context_from_path(session.get_branch()).thinking_level
    request = SummaryRequest(
        kind=SummaryKind.BRANCH,
        system_prompt=SUMMARIZATION_SYSTEM_PROMPT,
        prompt=build_branch_prompt(conversation, custom_instructions or None, replace_instructions),
        max_tokens=BRANCH_SUMMARY_MAX_TOKENS,
        reasoning=thinking if thinking not in ("", "off") else None,
        messages=convert_to_llm(messages),
        custom_instructions=custom_instructions or None,
    )
    # Replacement instructions define their own format: no heading check then (D-23).
    headings = () if (replace_instructions and custom_instructions) else BRANCH_SUMMARY_HEADINGS
    tracker = ProgressTracker(on_progress, f"Summarizing the branch ({len(messages)} messages)")
    try:
        generated = await generate_checked(
            summarizer,
            request,
            headings=headings,
            tracker=tracker,
            label="branch summary",
            fallback=None if isinstance(summarizer, ExtractiveSummarizer) else ExtractiveSummarizer(),
            strict=settings.summarizer.strict_headings,
        )
    except SummarizationError:
        raise
    except Exception as exc:
        log.exception("branch summarization raised an unexpected error")
        raise NavigationError(f"Branch summarization failed: {type(exc).__name__}: {exc}") from exc
    if omp_file:  # OMP-43: preamble + text, then one `<files>` block
        summary = omp.upsert_files_block(BRANCH_SUMMARY_PREAMBLE + generated.text, prep.file_ops) or NO_SUMMARY_GENERATED
    else:
        summary = finalize_branch_summary(generated.text, read_files, modified_files)  # B-14
    tracker.done("Branch summary generated", summary)
    return summary, details, generated.usage, generated.warnings
