"""The compactd daemon: a pygls LanguageServer speaking our `session/*` methods over stdio.

State lives here (open sessions, client options, running summarizations); the handlers in
handlers.py are thin functions over it. Everything that touches a Session runs on the event loop
thread; only read-only work on a snapshot (token counts, preparation, big tree views) and file
loading run in worker threads, so `$/cancelRequest` and other requests are answered meanwhile.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, BinaryIO, TypeVar

from lsprotocol import types
from pygls.io_ import StdoutWriter
from pygls.lsp.server import LanguageServer

from compactd import __version__
from compactd.compaction.exact_tokens import preload_counter
from compactd.engine.registry import SessionHandle, SessionRegistry
from compactd.engine.tree_panel import delta_nodes
from compactd.engine.settings import Settings, SettingsCache, build_summarizer, merge_settings
from compactd.session import Session, SessionView
from compactd.session.tree import resolve_labels
from compactd.summarize.base import Summarizer

from .answers import EncodedAnswer, encoded_quietly
from .errors import Code, RpcError
from .hooks import RpcHooks
from .order import SessionOrder
from .progress import ProgressReporter, acquire_token
from .protocol import CompactdProtocol, FdWriter, FrameReader, LoopInput, make_converter, start_stdin_reader
from .schema import InitOptions
from .watch import poll_interval, watch_files
from .watchdog import watch_process

log = logging.getLogger("compactd.rpc")
T = TypeVar("T")
SWITCH_INTERVAL = 0.0005  # seconds (see serve_stdio)


@dataclass(frozen=True)
class PathView:
    """A read-only view of a session for walks from one leaf (see `CompactdServer.path_view`)."""

    entries: list[dict[str, Any]]
    by_id: dict[str, dict[str, Any]]
    leaf_id: str | None

def _tree_delta(session: Session, new: list[dict[str, Any]]) -> dict[str, Any]:
    """What a side panel needs to show appended entries without fetching the tree again: the new
    entries as `session/tree` nodes, and the labels they set on entries (null: cleared)."""
    labels = resolve_labels(new)
    changed: dict[str, str | None] = {}
    for entry in new:
        target = entry.get("targetId")
        if entry.get("type") == "label" and isinstance(target, str):
            changed[target] = labels.get(target)
    return {"nodes": delta_nodes(new, session.by_id, labels, session.leaf_id), "labels": changed}


# Filled by handlers.py when it registers each method (the contract of architecture.md).
METHODS: list[str] = []
NOTIFICATIONS = ["session/didChange", "session/compactionStart", "session/compactionEnd"]
SERVER_REQUESTS = ["session/beforeCompact", "session/compacting", "session/beforeTree"]


@dataclass(eq=False)
class Job:
    """One running summarization (compaction, branch summary, auto-compaction)."""

    session_id: str
    kind: str
    task: asyncio.Task[Any]
    token: int | str | None = None
    cancelled_by: str | None = None  # "abort" | "progress" when not cancelled through the request

    def cancel(self, by: str) -> bool:
        if self.task.done():
            return False
        self.cancelled_by = self.cancelled_by or by
        self.task.cancel()
        return True


@dataclass
class ClientOptions:
    init: InitOptions = field(default_factory=InitOptions)
    _overrides: dict[str, Any] | None = field(default=None, init=False, repr=False, compare=False)

    def overrides(self) -> dict[str, Any]:
        """The client's settings overrides: the same object on every call (the settings cache
        knows it again by identity), not to be changed."""
        if self._overrides is None:
            merged = dict(self.init.settings)
            if self.init.summarizer is not None:
                merged = merge_settings(merged, {"summarizer": self.init.summarizer})
            self._overrides = merged
        return self._overrides


class CompactdServer(LanguageServer):
    protocol: CompactdProtocol

    def __init__(self) -> None:
        super().__init__(
            "compactd",
            __version__,
            text_document_sync_kind=types.TextDocumentSyncKind.None_,
            protocol_cls=CompactdProtocol,
            converter_factory=make_converter,
        )
        self.registry = SessionRegistry()
        self.order = SessionOrder()  # requests of a session in arrival order (order.py)
        self.options = ClientOptions()
        self._settings = SettingsCache()
        self.jobs: list[Job] = []
        self.background: set[asyncio.Task[Any]] = set()
        self._stop: asyncio.Event | None = None
        self.exit_code = 0

    # --- capabilities --------------------------------------------------------------------------

    def experimental_capabilities(self) -> dict[str, Any]:
        return {
            "compactd": {
                "version": __version__,
                "methods": list(METHODS),
                "notifications": list(NOTIFICATIONS),
                "serverRequests": list(SERVER_REQUESTS),
                "errorCodes": {code.name: int(code) for code in Code},
            }
        }

    def client_supports_progress(self) -> bool:
        caps = getattr(self.protocol, "client_capabilities", None)
        window = getattr(caps, "window", None) if caps is not None else None
        return bool(window is not None and window.work_done_progress)

    # --- settings ------------------------------------------------------------------------------

    def apply_options(self, options: InitOptions) -> None:
        self.options = ClientOptions(options)
        log.info("options applied: hooks=%s hookTimeoutMs=%d settings keys=%s summarizer=%s",
                 options.hooks, options.hook_timeout_ms, sorted(options.settings),
                 "set" if options.summarizer is not None else "default")

    def settings_for(self, session: Session | None) -> Settings:
        """Pi's files for the session's cwd (read each time: edits apply at once), then the
        client's overrides."""
        cwd = (session.cwd if session is not None else None) or os.getcwd()
        return self._settings.load(cwd, self.options.overrides())

    def summarizer_for(self, settings: Settings) -> Summarizer:
        return build_summarizer(settings)

    def hooks(self) -> RpcHooks | None:
        declared = set(self.options.init.hooks)
        if not declared:
            return None
        return RpcHooks(self, declared, self.options.init.hook_timeout_ms)

    # --- notifications -------------------------------------------------------------------------

    def notify(self, method: str, params: dict[str, Any]) -> None:
        self.protocol.notify(method, params)

    def announce(self, handle: SessionHandle, kind: str, entry_ids: list[str] | None = None) -> list[str]:
        """session/didChange for entries the client has not heard of yet (or explicit ids). A file
        reloaded since the last announcement is announced first as `reloaded`."""
        session = handle.session
        if kind not in ("appended", "leafMoved"):
            handle.forget_derived()  # entries changed in place (e.g. pruned)
        if handle.generation != session.generation:
            handle.generation = session.generation
            handle.announced = len(session.entries)
            self.notify("session/didChange", {"sessionId": handle.session_id, "kind": "reloaded", "entryIds": [],
                                               "leafId": session.leaf_id})
            if entry_ids is None:
                return []
        new_entries = session.entries[handle.announced:]
        new_ids = [e["id"] for e in new_entries]
        handle.announced = len(session.entries)
        if kind == "rewritten" and new_ids:  # e.g. adopted from another writer during the rewrite
            self.notify("session/didChange", {"sessionId": handle.session_id, "kind": "appended",
                                               "entryIds": new_ids, "leafId": session.leaf_id,
                                               **_tree_delta(session, new_entries)})
        ids = new_ids if entry_ids is None else entry_ids
        if kind == "appended" and not ids:
            return ids
        delta = _tree_delta(session, new_entries) if kind in ("appended", "leafMoved") and new_entries else {}
        self.notify("session/didChange", {"sessionId": handle.session_id, "kind": kind, "entryIds": ids,
                                           "leafId": session.leaf_id, **delta})
        return ids

    # --- running summarizations ----------------------------------------------------------------

    async def run_job(
        self,
        handle: SessionHandle,
        kind: str,
        title: str,
        client_token: int | str | None,
        work: Callable[[ProgressReporter], Awaitable[T]],
        *,
        action: str,
        progress: bool = True,
        on_start: Callable[[], None] | None = None,
    ) -> T:
        """Run `work` as its own task so every cancellation route can stop it and the request
        answers at once: `$/cancelRequest` cancels this handler (we stop waiting and cancel the
        job); `window/workDoneProgress/cancel` and `session/abort` cancel the job (we answer
        RequestCancelled naming the route). The engine writes nothing until the summary is done."""
        handle.ensure_idle(action)
        self.order.leave_current()  # the job runs on its own: later requests need not wait for it
        token = await acquire_token(self, client_token) if progress or client_token is not None else None
        handle.ensure_idle(action)  # re-check: another request may have started meanwhile
        reporter = ProgressReporter(self, token, title)
        task = asyncio.create_task(work(reporter), name=f"{kind}:{handle.session_id}")
        job = Job(handle.session_id, kind, task, token)
        reporter.on_token = lambda new_token: setattr(job, "token", new_token)
        handle.track(task, kind)
        self.jobs.append(job)
        reporter.begin(f"{title}…")
        if on_start is not None:
            on_start()
        outcome = "cancelled"
        try:
            result = await asyncio.shield(task)
            outcome = "done"
            return result
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if task.done() and not task.cancelled() and task.exception() is None:
                outcome = "done"  # finished in the same instant the cancel arrived
                return task.result()
            if current is not None and current.cancelling():
                job.cancel("request")
                raise
            raise RpcError(Code.REQUEST_CANCELLED, f"{title} cancelled",
                           {"cancelledBy": job.cancelled_by or "server"}) from None
        except BaseException as exc:
            detail = str(exc) or type(exc).__name__
            outcome = detail if detail.lower().startswith(title.lower()) else f"failed: {detail}"
            raise
        finally:
            self.jobs.remove(job)
            reporter.end(outcome if outcome.lower().startswith(title.lower()) else f"{title} {outcome}")

    def spawn(self, coro: Awaitable[Any], name: str) -> asyncio.Task[Any]:
        """A background task whose failure is logged, never raised into the loop."""
        task = asyncio.ensure_future(coro)
        self.background.add(task)

        def done(t: asyncio.Task[Any]) -> None:
            self.background.discard(t)
            if not t.cancelled() and t.exception() is not None:
                log.error("background task %s failed", name, exc_info=t.exception())

        task.add_done_callback(done)
        return task

    def cancel_jobs(self, *, session_id: str | None = None, token: int | str | None = None, by: str) -> int:
        """Cancel running summarizations of a session (session/abort) or of a progress token."""
        count = 0
        for job in list(self.jobs):
            if session_id is not None and job.session_id != session_id:
                continue
            if token is not None and job.token != token:
                continue
            count += job.cancel(by)
        return count

    # --- off-loop work -------------------------------------------------------------------------

    @staticmethod
    def snapshot(session: Session) -> SessionView:
        """A frozen read-only view for worker threads: appends on the loop do not disturb it."""
        return session.snapshot()

    @staticmethod
    def path_view(session: Session) -> PathView:
        """What a worker needs to walk back from the leaf (context, dry runs, statistics), without
        copying the session: the leaf is captured now, and appends on the loop only add to
        `entries` and `by_id`, so every parent link the worker follows stays as it was."""
        return PathView(session.entries, session.by_id, session.leaf_id)

    async def off_loop(self, fn: Callable[..., T], *args: Any) -> T:
        """`fn` in a worker thread, on what the handler captured from the session: the requests
        of the session behind this one may start meanwhile (order.py)."""
        self.order.leave_current()
        return await asyncio.to_thread(fn, *args)

    async def off_loop_encoded(self, build: Callable[[], Any]) -> EncodedAnswer:
        """`build()` in a worker, its JSON answer encoded there as well (`answers.py`)."""
        self.order.leave_current()
        return await asyncio.to_thread(encoded_quietly, build)

    # --- stdio loop ----------------------------------------------------------------------------

    def stop(self, code: int) -> None:
        self.exit_code = code
        if self._stop is not None:
            self._stop.set()

    def serve_stdio(self, stdin_fd_reader: Callable[..., LoopInput | None] = start_stdin_reader,
                    stdout: BinaryIO | None = None, client_pid: int | None = None) -> int:
        """Serve until `exit`, end of stdin, or (with `client_pid`) the client process is gone."""
        out = stdout or sys.stdout.buffer
        sys.stdout = sys.stderr  # a stray print() must never corrupt the protocol stream
        out.flush()
        try:
            writer: Any = FdWriter(out.fileno())
        except (AttributeError, OSError, ValueError):  # a stream without a descriptor (tests)
            writer = StdoutWriter(out)
        self.protocol.set_writer(writer)
        self.protocol.experimental = self.experimental_capabilities()
        # CPU-bound workers (counting, dry runs on long sessions) hold the GIL for up to the switch
        # interval each time the loop or the stdin reader wants it back; 5 ms by default, paid
        # several times per request. 0.5 ms keeps small requests responsive meanwhile.
        sys.setswitchinterval(SWITCH_INTERVAL)
        try:
            asyncio.run(self._serve(stdin_fd_reader, client_pid))
        except BrokenPipeError:
            log.error("client went away (broken pipe)")
            return 1
        return self.exit_code

    async def _serve(self, reader_starter: Callable[..., LoopInput | None], client_pid: int | None = None) -> None:
        loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()

        def on_eof() -> None:
            if not self._stop.is_set():  # type: ignore[union-attr]
                log.info("stdin closed; exiting")
                self.exit_code = 0 if self.protocol._shutdown else 1
                self._stop.set()  # type: ignore[union-attr]

        reader = FrameReader(self.protocol.receive_body, on_oversized=self.protocol.reject_oversized,
                             on_garbage=self.protocol.answer_unparsable)
        loop_input = reader_starter(loop, reader, on_eof)
        if loop_input is not None and isinstance(self.protocol.writer, FdWriter):
            self.protocol.writer.follow(loop_input)
        interval = poll_interval()
        if interval > 0:
            self.spawn(watch_files(self, interval), "watch-files")

        def on_client_gone() -> None:
            if not self._stop.is_set():  # type: ignore[union-attr]
                self.exit_code = 0 if self.protocol._shutdown else 1
                self._stop.set()  # type: ignore[union-attr]

        watcher = (watch_process(client_pid, lambda: loop.call_soon_threadsafe(on_client_gone))
                   if client_pid is not None else None)
        # Loading the tokenizer takes ~1 s, ~0.1 s of it holding the GIL: do it now, while the
        # client is still starting, rather than in the middle of the first token statistics.
        threading.Thread(target=preload_counter, name="compactd-preload", daemon=True).start()
        await self._stop.wait()
        if watcher is not None:
            watcher.set()
        for job in list(self.jobs):
            job.cancel("server")
        for task in list(self.background):
            task.cancel()
        for handle in self.registry:
            handle.cancel_all("server")
        pending = [j.task for j in self.jobs] + list(self.background)
        if pending:
            await asyncio.wait(pending, timeout=2)
