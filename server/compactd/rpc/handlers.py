"""The daemon's methods: validate params, call the session layer or the engine, shape the result.

Every result uses the field names of the CLI's `--json` output. protocol.md documents each one.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import logging
import os
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from lsprotocol import types
from pydantic import BaseModel

from compactd.compaction import reports
from compactd.engine import auto as engine_auto
from compactd.engine import compactor, navigator, pruner
from compactd.engine.busy import BusyError
from compactd.engine.registry import SessionHandle
from compactd.engine.tree_panel import CursorError
from compactd.engine.settings import SettingsError, context_window_for_model, load_settings
from compactd.session import Session
from compactd.session.context import build_session_context
from compactd.session.file_summary import FileSummary, summarize_file
from compactd.session.gc_pause import gc_paused
from compactd.session.tree import list_session_files, session_dir_for_cwd
from compactd.session.views import context_report, info_report, tree_report

from . import schema as s
from .answers import encode_answer
from .errors import Code, RpcError, invalid_params, to_rpc_error
from .heap import build_quietly, load_frozen, thaw_when_idle
from .progress import ProgressReporter
from .server import METHODS, CompactdServer
from .tree_stream import StreamedTree, encode_streamed, send_frames
from .watch import resync

log = logging.getLogger("compactd.rpc")

P = s.P
Handler = Callable[[CompactdServer, Any], Awaitable[Any]]
_HANDLERS: list[tuple[str, Handler]] = []


def method(name: str, model: type[P]) -> Callable[[Callable[[CompactdServer, P], Awaitable[Any]]], Any]:
    """Register `fn(server, params)` for `name`: params validated with `model`, any exception
    mapped to a JSON-RPC error (a handler error never reaches the loop)."""

    def decorator(fn: Callable[[CompactdServer, P], Awaitable[Any]]) -> Any:
        @functools.wraps(fn)
        async def handler(ls: CompactdServer, raw: Any) -> Any:
            params = s.parse(model, raw)
            session_id = getattr(params, "session_id", None)
            if not isinstance(session_id, str):
                try:
                    return await fn(ls, params)
                except Exception as exc:
                    raise to_rpc_error(exc) from exc
            # In arrival order per session (order.py); opens that arrived earlier may add it.
            opens = ls.order.opens_in_flight()
            turn = await ls.order.enter(session_id)
            try:
                if opens and ls.registry.find(session_id) is None:
                    await asyncio.wait(opens)
                return await fn(ls, params)
            except Exception as exc:
                raise to_rpc_error(exc) from exc
            finally:
                ls.order.leave(turn)

        _HANDLERS.append((name, handler))
        return fn

    return decorator


def dump(value: Any) -> Any:
    """Engine results (pydantic models or dataclasses) as camelCase JSON-ready dicts."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", by_alias=True)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    return value


def _path(raw: str) -> Path:
    return Path(os.path.abspath(os.path.expanduser(raw)))


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def session_report(handle: SessionHandle) -> dict[str, Any]:
    report = info_report(handle.session)
    report["header"] = handle.session.header
    report["inMemory"] = handle.session.in_memory
    report["busy"] = handle.busy
    report["running"] = handle.running()
    return report


def _leaf_arg(session: Session, params: s.LeafParams) -> tuple[bool, str | None]:
    if params.leaf_given and params.leaf_id is not None:
        session.require_entry(params.leaf_id)
    return params.leaf_given, params.leaf_id


# --- sessions -------------------------------------------------------------------------------------


@method("session/open", s.OpenParams)
async def session_open(ls: CompactdServer, params: s.OpenParams) -> dict[str, Any]:
    with ls.order.opening() as registered:
        return await _open(ls, params, registered)


async def _open(ls: CompactdServer, params: s.OpenParams, registered: asyncio.Future[None]) -> dict[str, Any]:
    path = _path(params.path)
    existing = ls.registry.find_path(path)
    if existing is not None:
        await resync(ls, existing)
        _set_window(existing, params.context_window)
        return {**session_report(existing), "alreadyOpen": True}
    if path.is_dir():
        raise RpcError(Code.FILE_ERROR, f"{path} is a directory, not a session file")
    size = path.stat().st_size if path.is_file() else 0
    session = await ls.off_loop(load_frozen, functools.partial(_open_with_labels, path, params.cwd), size)
    handle = ls.registry.add(session)
    registered.set_result(None)  # the requests behind this open may go on
    if handle.session is session:
        # The panel's tree index and the leaf's screen, built now in a worker so the first screen
        # is only a page away.
        await _warm_tree(ls, handle)
    _set_window(handle, params.context_window)
    return {**session_report(handle), "alreadyOpen": False}


def _open_with_labels(path: Path, cwd: str | None) -> Session:
    """`Session.open` with its labels resolved too, in the worker: otherwise the first request
    that reads a label or takes a snapshot resolves them on the event loop (~40 ms on 100k
    entries, every other request waiting). Appends keep them up to date."""
    session = Session.open(path, cwd=cwd)
    session.labels()
    return session


async def _warm_tree(ls: CompactdServer, handle: SessionHandle) -> None:
    session = handle.session
    entries, by_id, leaf, generation = list(session.entries), session.by_id, session.leaf_id, session.generation
    await ls.off_loop(build_quietly, lambda: handle.tree_panel.warm(entries, by_id, generation, leaf), len(entries))


def _set_window(handle: SessionHandle, context_window: int | None) -> None:
    """The client knows its model's window better than the name lookup (M-6)."""
    if context_window is not None:
        ensure_auto(handle).context_window = context_window


@method("session/create", s.CreateParams)
async def session_create(ls: CompactdServer, params: s.CreateParams) -> dict[str, Any]:
    path = _path(params.path) if params.path is not None else None
    if path is not None and not params.in_memory and path.exists() and path.stat().st_size > 0:
        raise RpcError(Code.FILE_ERROR, f"{path} already exists; open it with session/open")
    session = Session.create(params.cwd, path, in_memory=params.in_memory)
    handle = ls.registry.add(session)
    _set_window(handle, params.context_window)
    return session_report(handle)


@method("session/list", s.ListParams)
async def session_list(ls: CompactdServer, params: s.ListParams) -> dict[str, Any]:
    return {"sessions": [session_report(handle) for handle in ls.registry]}


@method("session/close", s.SessionParams)
async def session_close(ls: CompactdServer, params: s.SessionParams) -> dict[str, Any]:
    ls.registry.get(params.session_id)
    cancelled = ls.cancel_jobs(session_id=params.session_id, by="close")
    ls.registry.remove(params.session_id)
    thaw_when_idle(len(ls.registry))
    return {"sessionId": params.session_id, "closed": True, "cancelled": cancelled}


@method("session/listFiles", s.ListFilesParams)
async def session_list_files(ls: CompactdServer, params: s.ListFilesParams) -> dict[str, Any]:
    cwd = params.cwd or os.getcwd()
    directory = _path(params.dir) if params.dir is not None else session_dir_for_cwd(cwd)
    filter_cwd = cwd if params.dir is None or params.cwd is not None else None
    infos = await ls.off_loop(list_session_files, directory, filter_cwd)
    summaries = await ls.off_loop(lambda: [_summary_of(info.path) for info in infos])
    files = []
    for info, summary in zip(infos, summaries, strict=True):
        handle = ls.registry.find_path(info.path)
        files.append({
            "path": str(info.path),
            "sessionId": info.session_id,
            "cwd": info.cwd,
            "modified": _iso(info.mtime),
            "size": info.size,
            "open": handle is not None,
            "name": summary.name if summary else None,
            "firstRequest": summary.first_request if summary else None,
            "entryCount": summary.entry_count if summary else None,
        })
    return {"dir": str(directory), "files": files}


def _summary_of(path: Path) -> FileSummary | None:
    try:
        return summarize_file(path)
    except OSError:  # removed or unreadable since it was listed: the picker still lists it
        return None


# --- appends --------------------------------------------------------------------------------------


def _append_one(session: Session, entry: Any, raw: dict[str, Any]) -> str:
    if isinstance(entry, s.MessageIn):
        message = dict(raw["message"])
        if message.get("timestamp") is None:
            message["timestamp"] = int(time.time() * 1000)  # Pi messages always carry one (M-7)
        return session.append_message(message)
    if isinstance(entry, s.ThinkingLevelIn):
        return session.append_thinking_level_change(entry.thinking_level)
    if isinstance(entry, s.ModelChangeIn):
        return session.append_model_change(entry.provider, entry.model_id)
    if isinstance(entry, s.CustomIn):
        return session.append_custom_entry(entry.custom_type, raw.get("data"))
    if isinstance(entry, s.CustomMessageIn):
        return session.append_custom_message_entry(entry.custom_type, raw["content"], entry.display,
                                                   raw.get("details"))
    if isinstance(entry, s.LabelIn):
        return session.append_label_change(entry.target_id, entry.label)
    if isinstance(entry, s.SessionInfoIn):
        return session.append_session_info(entry.name)
    raise invalid_params(f"entries: unsupported entry type {type(entry).__name__}")


@method("session/append", s.AppendParams)
async def session_append(ls: CompactdServer, params: s.AppendParams) -> dict[str, Any]:
    handle = ls.registry.get(params.session_id)
    await resync(ls, handle, refuse_reload=True)
    session = handle.session
    raws: list[dict[str, Any]] = params.raw()["entries"]
    for index, entry in enumerate(params.entries):  # refuse the whole batch before writing anything
        if isinstance(entry, s.LabelIn) and entry.target_id not in session.by_id:
            raise RpcError(Code.ENTRY_NOT_FOUND, f"entries.{index}.targetId: Entry {entry.target_id} not found",
                           {"entryId": entry.target_id})
    ids: list[str] = []
    async with handle.lock:
        try:
            with session.batch():  # one write for the whole batch, or nothing written or kept
                for entry, raw in zip(params.entries, raws):
                    ids.append(_append_one(session, entry, raw))
        finally:
            ls.announce(handle, "appended")
    appended = [session.by_id[i] for i in ids]
    try:
        schedule_auto_check(ls, handle, appended)
    except Exception as exc:  # the append itself succeeded; never fail it afterwards
        log.error("auto-compaction check not scheduled for %s", handle.session_id, exc_info=exc)
    return {"entryIds": ids, "leafId": session.leaf_id}


# --- views ----------------------------------------------------------------------------------------


@method("session/context", s.ContextParams)
async def session_context(ls: CompactdServer, params: s.ContextParams) -> dict[str, Any]:
    handle = ls.registry.get(params.session_id)
    await resync(ls, handle)
    given, leaf = _leaf_arg(handle.session, params)
    snap = ls.path_view(handle.session)

    target = leaf if given else snap.leaf_id

    def build() -> dict[str, Any]:
        report = context_report(snap, leaf) if given else context_report(snap)  # type: ignore[arg-type]
        if params.include_messages:
            ctx = build_session_context(snap.entries, report["leafId"], snap.by_id)
            for item, message in zip(report["messages"], ctx.messages):
                item["message"] = message
        return report

    if target is None or params.include_messages:
        return await ls.off_loop_encoded(build)
    # Reports per leaf, extended by appends: one entry's work on the next request; a report
    # already there is answered on the loop (no work to move off it, no thread hop), encoded once.
    cached = handle.context_cache
    hit = cached.peek(target)
    if hit is None:  # built and encoded in a worker (a long path's answer is megabytes)

        def build_encoded() -> tuple[dict[str, Any], Any]:
            report = cached.report(snap.by_id, target, build)
            return report, encode_answer(report)

        hit, answer = await ls.off_loop(build_encoded)
    else:
        memo = handle.encoded_answers.get("session/context")
        answer = memo[1] if memo is not None and memo[0] is hit else encode_answer(hit)
    handle.encoded_answers["session/context"] = (hit, answer)
    return answer


@method("session/tree", s.TreeParams)
async def session_tree(ls: CompactdServer, params: s.TreeParams) -> dict[str, Any]:
    handle = ls.registry.get(params.session_id)
    await resync(ls, handle)
    session = handle.session
    compat = ls.settings_for(session).compat_for(session)  # D-29: which semantics this file gets
    if params.limit is None:  # every node (the original answer)
        snap = ls.snapshot(session)
        token = params.partial_result_token
        if token is not None:  # streamed in chunks, other answers written between them

            def build_streamed() -> StreamedTree:
                with gc_paused():  # (as `encoded_quietly`: the nodes die inside the pause)
                    return encode_streamed({**reports.summary_figures(snap, tree_report(snap)), "compat": compat}, token)

            streamed = await ls.off_loop(build_streamed)
            await send_frames(ls.protocol.writer, streamed.frames)
            return streamed.answer  # type: ignore[return-value]
        # Encoded in the worker too: 100k nodes encoded on the loop held every other request
        # ~0.6 s (the daemon_tree benchmark's requests while every node is built).
        return await ls.off_loop_encoded(  # type: ignore[return-value]
            lambda: {**reports.summary_figures(snap, tree_report(snap)), "compat": compat})
    if handle.tree_panel.stale(session.by_id, session.generation):  # reloaded since: rebuild it quietly
        await _warm_tree(ls, handle)
    # Pages from the cached index: the worker reads the entries appended so far (appends on the
    # loop only add to them) and the leaf captured here.
    entries, by_id, leaf, generation = session.entries, session.by_id, session.leaf_id, session.generation
    limit = params.limit

    def build() -> dict[str, Any]:
        try:
            page = handle.tree_panel.page(entries, by_id, generation, leaf, limit, params.branch,
                                          params.after, params.before, top="branch" in params.model_fields_set)
            return {**page, "compat": compat}
        except CursorError as exc:
            raise invalid_params(str(exc)) from None

    return await ls.off_loop(build)


@method("session/entry", s.EntryParams)
async def session_entry(ls: CompactdServer, params: s.EntryParams) -> dict[str, Any]:
    handle = ls.registry.get(params.session_id)
    await resync(ls, handle)
    session = handle.session
    entry = session.require_entry(params.entry_id)
    return {"entry": entry, "label": session.get_label(params.entry_id)}


@method("session/tokenStats", s.TokenStatsParams)
async def session_token_stats(ls: CompactdServer, params: s.TokenStatsParams) -> dict[str, Any]:
    handle = ls.registry.get(params.session_id)
    await resync(ls, handle)
    _, leaf = _leaf_arg(handle.session, params)
    settings = ls.settings_for(handle.session)
    # No copy of the entries (it would cost more than the answer on long sessions): the worker
    # only follows parent links back from the leaf captured here, appends on the loop only add
    # to `by_id`, and each dict lookup is atomic.
    snap = ls.path_view(handle.session)
    auto = ensure_auto(handle)

    def build() -> dict[str, Any]:
        # Running totals per leaf: after an append only the new entry is counted.
        totals = reports.context_totals(snap, leaf, cache=handle.token_cache, totals=handle.totals)
        # The window automatic compaction uses: the context's model, looked up by name.
        model = totals.window_model
        window = auto.context_window or (context_window_for_model(model) if model else settings.context_window)
        return reports.stats_report(snap, leaf, context_window=window, reserve_tokens=settings.compaction.reserve_tokens,
                                    cache=handle.token_cache, totals=handle.totals,
                                    compat=settings.compat_for(handle.session))

    if _totals_known(handle, leaf if leaf is not None else snap.leaf_id):
        return await ls.off_loop(build)
    # A count from scratch (the first one, or after a reload, prune or jump): on a long session
    # hundreds of thousands of counts and projected messages, kept out of the collector's passes.
    return await ls.off_loop(build_quietly, build, len(snap.entries))


def _totals_known(handle: SessionHandle, leaf: str | None) -> bool:
    """The statistics at `leaf` are cached or extend those of its parent (after an append)."""
    if handle.totals.get(leaf, None) is not None:
        return True
    entry = handle.session.by_id.get(leaf) if leaf is not None else None
    parent = entry.get("parentId") if entry is not None else None
    return parent is not None and handle.totals.get(parent, None) is not None


@method("session/prepareCompaction", s.PrepareParams)
async def session_prepare(ls: CompactdServer, params: s.PrepareParams) -> dict[str, Any] | None:
    handle = ls.registry.get(params.session_id)
    await resync(ls, handle)
    _, leaf = _leaf_arg(handle.session, params)
    settings = ls.settings_for(handle.session)
    compaction = settings.compaction
    compat = settings.compat_for(handle.session)  # D-29
    keep = params.keep_recent_tokens if params.keep_recent_tokens is not None else compaction.keep_recent_tokens
    reserve = params.reserve_tokens if params.reserve_tokens is not None else compaction.reserve_tokens
    snap = ls.path_view(handle.session)
    # The answer depends only on the path to the leaf (appends never change it; prunes and
    # reloads clear the memo) and these settings: asked again, e.g. by a panel refreshing its
    # preview, it is sent as it was.
    key = (leaf if leaf is not None else snap.leaf_id, keep, reserve, params.include_text, compat)
    memo = handle.encoded_answers.get("session/prepareCompaction")
    if memo is not None and memo[0] == key:
        return memo[1]
    epoch = handle.derived_epoch
    # The texts come encoded per message from the session's cache, sent in parts (answers.py).
    answer = await ls.off_loop_encoded(lambda: reports.prepare_report(snap, leaf, keep, reserve,
                                                                      text_cache=handle.text_cache,
                                                                      include_text=params.include_text,
                                                                      text_as_json=True, compat=compat))
    if handle.derived_epoch == epoch:  # not pruned or reloaded meanwhile
        handle.encoded_answers["session/prepareCompaction"] = (key, answer)
    return answer


# --- summarizations -------------------------------------------------------------------------------


def _failure_message(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return text if text.startswith("Compaction failed") else f"Compaction failed: {text}"


@method("session/compact", s.CompactParams)
async def session_compact(ls: CompactdServer, params: s.CompactParams) -> dict[str, Any]:
    handle = ls.registry.get(params.session_id)
    await resync(ls, handle, strict=True)  # prepare on what is on disk now
    session = handle.session
    settings = ls.settings_for(session)
    summarizer = ls.summarizer_for(settings)
    hooks = ls.hooks()
    started = False

    def on_start() -> None:
        nonlocal started
        started = True
        ls.notify("session/compactionStart", {"sessionId": handle.session_id, "reason": "manual"})

    async def work(progress: ProgressReporter) -> Any:
        return await compactor.compact(session, settings, summarizer, reason="manual",
                                       custom_instructions=params.custom_instructions, hooks=hooks,
                                       on_progress=progress.update)

    end: dict[str, Any] = {"sessionId": handle.session_id, "reason": "manual", "result": None, "aborted": False,
                           "willRetry": False}
    try:
        result = dump(await ls.run_job(handle, "compaction", "Compaction", params.work_done_token, work,
                                       action="compact", on_start=on_start))
    except asyncio.CancelledError:
        if started:
            ls.notify("session/compactionEnd", {**end, "aborted": True})
        raise
    except BaseException as exc:
        if started:
            error = to_rpc_error(exc)
            aborted = error.code in (Code.REQUEST_CANCELLED, Code.CANCELLED_BY_HOOK)
            payload = {**end, "aborted": aborted}
            if not aborted:
                payload["errorMessage"] = _failure_message(exc)
            ls.announce(handle, "appended")
            ls.notify("session/compactionEnd", payload)
        raise
    ls.announce(handle, "appended")
    ls.notify("session/compactionEnd", {**end, "result": result})
    return result


@method("session/navigate", s.NavigateParams)
async def session_navigate(ls: CompactdServer, params: s.NavigateParams) -> dict[str, Any]:
    handle = ls.registry.get(params.session_id)
    await resync(ls, handle, strict=True)
    session = handle.session
    session.require_entry(params.target_id)
    settings = ls.settings_for(session)
    summarizer = ls.summarizer_for(settings)
    hooks = ls.hooks()
    old_leaf = session.leaf_id

    async def work(progress: ProgressReporter) -> Any:
        return await navigator.navigate(session, params.target_id, settings, summarizer,
                                        summarize=params.summarize,
                                        custom_instructions=params.custom_instructions,
                                        replace_instructions=params.replace_instructions, label=params.label,
                                        hooks=hooks, on_progress=progress.update)

    title = "Branch summary" if params.summarize else "Navigation"
    try:
        result = dump(await ls.run_job(handle, "navigation", title, params.work_done_token, work,
                                       action="navigate", progress=params.summarize))
    finally:
        if session.leaf_id != old_leaf or len(session.entries) > handle.announced:
            ls.announce(handle, "leafMoved" if session.leaf_id != old_leaf else "appended")
    result["leafId"] = session.leaf_id
    return result


@method("session/prune", s.PruneParams)
async def session_prune(ls: CompactdServer, params: s.PruneParams) -> dict[str, Any]:
    handle = ls.registry.get(params.session_id)
    await resync(ls, handle)
    settings = ls.settings_for(handle.session)
    snap = ls.snapshot(handle.session)
    # Plan on a snapshot off the loop; only rewrite (on the loop, under the lock) when it pays.
    plan = dump(await ls.off_loop(lambda: pruner.prune(snap, settings, dry_run=True)))
    if params.dry_run or not plan.get("prunedCount"):
        return plan
    async with handle.lock:
        result = dump(pruner.prune(handle.session, settings, dry_run=False))
    if result.get("prunedCount"):
        ls.announce(handle, "rewritten", list(result.get("entryIds") or []))
    return result


@method("session/label", s.LabelParams)
async def session_label(ls: CompactdServer, params: s.LabelParams) -> dict[str, Any]:
    handle = ls.registry.get(params.session_id)
    await resync(ls, handle, refuse_reload=True)
    async with handle.lock:
        try:
            entry_id = handle.session.append_label_change(params.target_id, params.label)
        finally:
            ls.announce(handle, "appended")
    return {"entryId": entry_id, "targetId": params.target_id, "label": params.label or None,
            "leafId": handle.session.leaf_id}


@method("session/fork", s.ForkParams)
async def session_fork(ls: CompactdServer, params: s.ForkParams) -> dict[str, Any]:
    handle = ls.registry.get(params.session_id)
    await resync(ls, handle)
    session = handle.session
    handle.ensure_idle("fork")
    leaf = params.leaf_id if params.leaf_id is not None else session.leaf_id
    if leaf is None:
        raise RpcError(Code.ENTRY_NOT_FOUND, "Session has no entries to fork", {"entryId": None})
    session.require_entry(leaf)
    path = _path(params.path) if params.path is not None else None
    if path is not None and path.exists() and path.stat().st_size > 0:
        raise RpcError(Code.FILE_ERROR, f"{path} already exists")
    async with handle.lock:
        new = session.fork(leaf, path, in_memory=params.in_memory)
    new_handle = ls.registry.add(new)
    return {**session_report(new_handle), "forkedFrom": handle.session_id, "forkedAt": leaf}


@method("session/abort", s.SessionParams)
async def session_abort(ls: CompactdServer, params: s.SessionParams) -> dict[str, Any]:
    ls.registry.get(params.session_id)
    return {"sessionId": params.session_id, "aborted": ls.cancel_jobs(session_id=params.session_id, by="abort")}


@method("session/reportOverflow", s.ReportOverflowParams)
async def session_report_overflow(ls: CompactdServer, params: s.ReportOverflowParams) -> dict[str, Any]:
    handle = ls.registry.get(params.session_id)
    await resync(ls, handle)
    auto = ensure_auto(handle)
    session = handle.session
    settings = ls.settings_for(session)
    summarizer = ls.summarizer_for(settings)
    hooks = ls.hooks()

    async def work(progress: ProgressReporter) -> Any:
        events = AutoEvents(ls, handle, progress)
        return await auto.report_overflow(session, settings, summarizer, hooks, events.on_event,
                                          error_message=params.error_message, on_progress=progress.update)

    try:
        outcome = await ls.run_job(handle, "overflow recovery", "Overflow recovery", params.work_done_token,
                                   work, action="recover from an overflow", progress=False)
    finally:
        ls.announce(handle, "appended")
    return {"sessionId": handle.session_id, **_outcome_json(outcome)}


# --- auto-compaction ------------------------------------------------------------------------------


def _outcome_json(outcome: Any) -> dict[str, Any]:
    """An engine AutoOutcome (or None: nothing happened) in wire form."""
    if outcome is None:
        return {"reason": None, "result": None, "aborted": False, "willRetry": False}
    data = dump(outcome)
    return {k: v for k, v in data.items() if v is not None or k in ("reason", "result")}


def ensure_auto(handle: SessionHandle) -> engine_auto.AutoCompactor:
    if handle.auto is None:
        handle.auto = engine_auto.AutoCompactor()
    return handle.auto


class AutoEvents:
    """Forwards the engine's compactionStart/compactionEnd to the client (with sessionId), starts
    the work-done progress once a compaction really begins, and announces the compaction entry
    before the end event."""

    def __init__(self, ls: CompactdServer, handle: SessionHandle, progress: ProgressReporter) -> None:
        self.ls = ls
        self.handle = handle
        self.progress = progress

    def on_event(self, name: str, payload: dict[str, Any]) -> None:
        if name == "compactionStart" and self.progress.token is None:
            self.ls.spawn(self.progress.start_later(), f"progress:{self.handle.session_id}")
        if name == "compactionEnd":
            self.ls.announce(self.handle, "appended")
        self.ls.notify(f"session/{name}", {"sessionId": self.handle.session_id, **dump(payload)})


def schedule_auto_check(ls: CompactdServer, handle: SessionHandle, appended: list[dict[str, Any]]) -> None:
    """After an append, let the engine decide whether to prune/compact (M-1..M-10, D-19, D-24).
    Runs in the background as a cancellable job; skipped while a summarization runs."""
    if handle.busy or not any(e.get("type") == "message" for e in appended):
        return
    auto = ensure_auto(handle)

    async def check() -> None:
        if ls.registry.find(handle.session_id) is not handle:
            return  # closed meanwhile
        session = handle.session
        try:
            settings = ls.settings_for(session)
        except SettingsError as exc:
            log.warning("auto-compaction skipped for %s: %s", handle.session_id, exc)
            return
        summarizer = ls.summarizer_for(settings)
        hooks = ls.hooks()

        async def work(progress: ProgressReporter) -> Any:
            events = AutoEvents(ls, handle, progress)
            return await auto.after_append(session, appended, settings, summarizer, hooks, events.on_event,
                                           on_progress=progress.update)

        try:
            outcome = await ls.run_job(handle, "auto-compaction", "Auto-compaction", None, work,
                                       action="auto-compact", progress=False)
            if outcome is not None and getattr(outcome, "pruned", None) is not None:
                ls.announce(handle, "rewritten", list(outcome.pruned.entry_ids))
        except BusyError as exc:  # a summarization started meanwhile: it decides for this state
            log.info("auto-compaction check for %s skipped: %s", handle.session_id, exc)
        except RpcError as exc:  # cancelled (session/abort, progress cancel)
            log.info("auto-compaction for %s ended: %s", handle.session_id, exc.message)
        except Exception as exc:  # background task: log, never raise into the loop
            log.error("auto-compaction for %s failed", handle.session_id, exc_info=exc)
        finally:
            ls.announce(handle, "appended")

    ls.spawn(check(), f"auto-check:{handle.session_id}")


# --- lifecycle ------------------------------------------------------------------------------------


def _options_from(raw: Any) -> s.InitOptions:
    if isinstance(raw, dict) and isinstance(raw.get("compactd"), dict):
        raw = raw["compactd"]
    return s.parse(s.InitOptions, raw)


def _check_settings(ls: CompactdServer) -> str | None:
    try:
        load_settings(os.getcwd(), ls.options.overrides())
    except SettingsError as exc:
        return str(exc)
    return None


def register(ls: CompactdServer) -> None:
    for name, handler in _HANDLERS:
        ls.feature(name)(handler)
        if name not in METHODS:
            METHODS.append(name)

    @ls.feature(types.INITIALIZE)
    def initialize(ls: CompactdServer, params: types.InitializeParams) -> None:
        ls.apply_options(_options_from(params.initialization_options))
        problem = _check_settings(ls)
        if problem:
            log.warning("settings problem: %s", problem)
            ls.window_show_message(types.ShowMessageParams(types.MessageType.Warning, f"compactd: {problem}"))

    @ls.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    def did_change_configuration(ls: CompactdServer, params: types.DidChangeConfigurationParams) -> None:
        raw = params.settings
        if isinstance(raw, dict) and isinstance(raw.get("compactd"), dict):
            raw = raw["compactd"]
        if not isinstance(raw, dict):
            log.warning("workspace/didChangeConfiguration ignored: settings is not an object")
            return
        merged = {**ls.options.init.model_dump(by_alias=True), **raw}
        try:
            options = s.parse(s.InitOptions, merged)
        except RpcError as exc:
            log.warning("workspace/didChangeConfiguration ignored: %s", exc.message)
            ls.window_show_message(types.ShowMessageParams(types.MessageType.Error, f"compactd: {exc.message}"))
            return
        ls.apply_options(options)
        problem = _check_settings(ls)
        if problem:
            ls.window_show_message(types.ShowMessageParams(types.MessageType.Warning, f"compactd: {problem}"))

    @ls.feature(types.WINDOW_WORK_DONE_PROGRESS_CANCEL)
    def progress_cancel(ls: CompactdServer, params: types.WorkDoneProgressCancelParams) -> None:
        if not ls.cancel_jobs(token=params.token, by="progress"):
            log.info("window/workDoneProgress/cancel: no running job for token %r", params.token)

    @ls.feature(types.SHUTDOWN)
    def shutdown(ls: CompactdServer, params: Any) -> None:
        for job in list(ls.jobs):
            job.cancel("shutdown")
        for task in list(ls.background):
            task.cancel()


def create_server() -> CompactdServer:
    server = CompactdServer()
    register(server)
    return server
