"""The real daemon (`python -m compactd serve` over stdio, LSP framing) against a slowly streaming
fake OpenAI server (tests/support/fake_openai.py):

- `daemon_roundtrip`: latency of a small request (session/entry) when idle and while another
  session is compacting (its summary streaming in, progress notifications flowing);
- `cancel_latency`: from `$/cancelRequest` to the cancelled response, and to the moment the model
  server sees its connection closed."""

from __future__ import annotations

import contextlib
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
from compactd.samples import write_session

from bench import Case, Context, scenario
from bench.host_stalls import HostStalls
from bench.lsp import Daemon, daemon_on_copy, entry_requests_while
from tests.support.fake_openai import FakeOpenAI, Reply

KEY_ENV = "X_KEY"
REQUEST_CANCELLED = -32800
SESSION_BUSY = -32012
# Long enough to outlast any measurement; every chunk is a progress notification to the client.
SLOW_STREAM = Reply.stream(["word "] * 20_000, chunk_delay=0.01)


@contextlib.contextmanager
def _setup(turns: int = 8) -> Iterator[tuple[Daemon, FakeOpenAI, str, str]]:
    """A daemon with two open sessions A and B; yields (daemon, fake, id of A, id of B)."""
    with tempfile.TemporaryDirectory(prefix="compactd-bench-") as tmp, FakeOpenAI() as fake:
        root = Path(tmp)
        (root / "agent").mkdir()
        ids = []
        for name, seed in (("a", 3), ("b", 4)):
            path = write_session(root / f"{name}.jsonl", seed=seed, turns=turns, compactions=False, cwd=tmp)
            ids.append(orjson.loads(path.read_bytes().split(b"\n", 1)[0])["id"])
        fake.default = SLOW_STREAM
        daemon = Daemon(env={KEY_ENV: "sk-bench-not-a-real-key", "PI_CODING_AGENT_DIR": str(root / "agent")}, cwd=root)
        try:
            daemon.initialize({
                "settings": {"compaction": {"keepRecentTokens": 800}, "retry": {"enabled": False}},
                "summarizer": {"backend": "openai", "baseUrl": fake.url, "model": "gpt-4o-mini", "apiKeyEnv": KEY_ENV},
            })
            for name in ("a", "b"):
                daemon.call("session/open", {"path": str(root / f"{name}.jsonl")})
            yield daemon, fake, ids[0], ids[1]
        finally:
            daemon.close()


def _settled(fake: FakeOpenAI, timeout: float = 10) -> None:
    """Wait until every model request has ended (completed or hung up), then reset the flag."""
    deadline = time.perf_counter() + timeout
    while fake.disconnects + fake.completed < len(fake.requests) and time.perf_counter() < deadline:
        time.sleep(0.005)
    fake.disconnected.clear()


def _start_compaction(daemon: Daemon, fake: FakeOpenAI, session_id: str) -> int:
    """Start session/compact and return its request id once the model is streaming."""
    for _ in range(200):
        seen = len(fake.requests)
        msg_id = daemon.start("session/compact", {"sessionId": session_id, "workDoneToken": f"w{time.time_ns()}"})
        deadline = time.perf_counter() + 30
        response: dict[str, Any] | None = None
        while len(fake.requests) == seen and response is None and time.perf_counter() < deadline:
            with contextlib.suppress(TimeoutError):
                response = daemon.wait(msg_id, timeout=0.005)
        if response is None:
            time.sleep(0.2)  # the summary is streaming now
            return msg_id
        if response.get("error", {}).get("code") != SESSION_BUSY:  # busy right after a cancel: retry
            raise RuntimeError(f"session/compact ended early: {response}")
        time.sleep(0.02)
    raise RuntimeError("could not start a compaction")


def _round_trips(daemon: Daemon, session_id: str, entry_id: str, n: int, min_seconds: float) -> list[float]:
    out = []
    started = time.perf_counter()
    while len(out) < n or time.perf_counter() - started < min_seconds:
        t0 = time.perf_counter()
        daemon.call("session/entry", {"sessionId": session_id, "entryId": entry_id})
        out.append(time.perf_counter() - t0)
    return out


def _record_close(fake: FakeOpenAI, out: list[float]) -> None:
    if fake.disconnected.wait(30):
        out.append(time.perf_counter())


def _cancel(daemon: Daemon, msg_id: int) -> None:
    daemon.notify("$/cancelRequest", {"id": msg_id})
    daemon.wait(msg_id, timeout=30)


@scenario("daemon_roundtrip", description="small request round trip to the real daemon, idle and while compacting (ms)")
def daemon_roundtrip(ctx: Context) -> Iterator[Case]:
    n, seconds = (30, 0.3) if ctx.smoke else (1000, 3.0)
    measured: dict[str, list[float]] = {}

    def measure() -> None:
        with _setup() as (daemon, fake, a, b):
            entry_id = daemon.call("session/context", {"sessionId": b})["leafId"]
            _round_trips(daemon, b, entry_id, 20, 0)  # warm up
            measured["idle"] = _round_trips(daemon, b, entry_id, n, seconds)
            msg_id = _start_compaction(daemon, fake, a)
            streamed_before = len(daemon.notifications)
            measured["busy"] = _round_trips(daemon, b, entry_id, n, seconds)
            measured["notifications during"] = [len(daemon.notifications) - streamed_before]
            _cancel(daemon, msg_id)

    def samples(key: str) -> list[float]:
        if not measured:
            measure()
        return measured[key]

    yield Case("session/entry idle", lambda: samples("idle"), unit="ms", sampled=True, extra={"requests": n})
    yield Case("session/entry while another session compacts", lambda: samples("busy"), unit="ms", sampled=True,
               extra={"requests": n, "note": "the other session's summary streams 100 chunks/s"},
               after=lambda r: r["derived"].update(notes=int(measured["notifications during"][0])))


@scenario("cancel_latency", description="$/cancelRequest → response, and → model stream closed (ms)")
def cancel_latency(ctx: Context) -> Iterator[Case]:
    k = 3 if ctx.smoke else 20
    measured: dict[str, list[float]] = {"response": [], "closed": []}

    def measure() -> None:
        with _setup() as (daemon, fake, a, _b):
            for _ in range(k):
                _settled(fake)
                msg_id = _start_compaction(daemon, fake, a)
                closed_at: list[float] = []
                watcher = threading.Thread(target=_record_close, args=(fake, closed_at))
                watcher.start()
                t0 = time.perf_counter()
                daemon.notify("$/cancelRequest", {"id": msg_id})
                response = daemon.wait(msg_id, timeout=30)
                if response.get("error", {}).get("code") != REQUEST_CANCELLED:
                    raise RuntimeError(f"expected RequestCancelled, got {response}")
                watcher.join(30)
                measured["response"].append(response["_at"] - t0)
                measured["closed"].append(closed_at[0] - t0 if closed_at else float("nan"))

    def samples(key: str) -> list[float]:
        if not measured["response"]:
            measure()
        return measured[key]

    note: dict[str, Any] = {"cancels": k, "model": "fake OpenAI streaming 100 chunks/s"}
    yield Case("cancel → response", lambda: samples("response"), unit="ms", sampled=True, extra=note)
    yield Case("cancel → model stream closed", lambda: samples("closed"), unit="ms", sampled=True, extra=note)


@scenario("daemon_token_stats", description="session/tokenStats through the daemon after appending one entry to a long session (ms)")
def daemon_token_stats(ctx: Context) -> Iterator[Case]:
    count = ctx.entry_count()
    source = ctx.entries_session(count)
    k = 5 if ctx.smoke else 21
    windows: list[tuple[float, float]] = []
    host = HostStalls()

    def measure() -> list[float]:
        if windows:
            return [end - start for start, end in windows]
        with tempfile.TemporaryDirectory(prefix="compactd-bench-") as tmp:
            root = Path(tmp)
            (root / "agent").mkdir()
            copy = root / "long.jsonl"
            copy.write_bytes(source.read_bytes())
            daemon = Daemon(env={"PI_CODING_AGENT_DIR": str(root / "agent")}, cwd=root)
            try:
                daemon.initialize({"settings": {"compaction": {"enabled": False}}})
                session_id = daemon.call("session/open", {"path": str(copy)}, timeout=300)["sessionId"]
                daemon.call("session/tokenStats", {"sessionId": session_id}, timeout=300)  # fills the caches
                with host:
                    for i in range(k):
                        daemon.call("session/append", {"sessionId": session_id, "entries": [{"type": "message", "message": {
                            "role": "user", "content": f"next step {i}", "timestamp": 1_760_000_000_000 + i}}]})
                        t0 = time.perf_counter()
                        daemon.call("session/tokenStats", {"sessionId": session_id})
                        windows.append((t0, time.perf_counter()))
            finally:
                daemon.close()
        return [end - start for start, end in windows]

    def derive(result: dict[str, Any]) -> None:
        clear = [end - start for start, end in windows if not host.stalled_ms(start, end)]
        result["derived"].update(
            max_outside_host_stalls=max(clear, default=0.0) * 1000,
            requests_in_host_stalls=len(windows) - len(clear),
        )

    yield Case(f"tokenStats after append, {count // 1000}k entries", measure, unit="ms", sampled=True,
               extra={"entries": count, "note": "includes the handler's snapshot of the session and JSON-RPC"},
               after=derive)


@scenario("daemon_first_count", description="other requests while the first session/tokenStats of a long uncompacted session counts it exactly (ms)")
def daemon_first_count(ctx: Context) -> Iterator[Case]:
    count = ctx.entry_count()
    source = ctx.entries_session(count, compactions=False)
    measured: dict[str, list[float]] = {}
    host = HostStalls()

    def measure() -> None:
        with daemon_on_copy(source) as (daemon, session_id):
            entry_id = daemon.call("session/context", {"sessionId": session_id})["leafId"]
            _round_trips(daemon, session_id, entry_id, 20, 0)  # warm up
            with host:
                t0 = time.perf_counter()
                windows = entry_requests_while(daemon, "session/tokenStats", {"sessionId": session_id},
                                               session_id, entry_id)
                measured["first"] = [time.perf_counter() - t0]
            measured["others"] = [end - start for start, end in windows] or [0.0]
            # Requests the host stalled (a CPU taken away while they ran) are kept in the samples;
            # the maximum over the others is what the daemon itself made a request wait.
            measured["clear"] = [end - start for start, end in windows if not host.stalled_ms(start, end)] or [0.0]

    def samples(key: str) -> list[float]:
        if not measured:
            measure()
        return measured[key]

    def derive(result: dict[str, Any]) -> None:
        result["derived"].update(
            max=max(result["samples"]),
            max_outside_host_stalls=max(measured["clear"]) * 1000,
            requests_in_host_stalls=len(measured["others"]) - len(measured["clear"]),
            host_stalls_ms=[round(s.ms) for s in host.stalls],
        )

    note = {"entries": count, "note": "uncompacted: the context is the whole path"}
    yield Case(f"first tokenStats, {count // 1000}k entries", lambda: samples("first"), unit="ms", sampled=True, extra=note)
    yield Case("session/entry while it counts", lambda: samples("others"), unit="ms", sampled=True, extra=note,
               after=derive)
