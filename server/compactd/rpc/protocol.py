"""pygls plumbing: raw-dict params, robust stdio framing, error responses, capabilities.

Why not pygls' defaults:
- pygls turns the params of custom methods into namedtuples (renaming keys that are not Python
  identifiers), which would corrupt appended entries; our converter keeps them as plain dicts.
- pygls' reader logs and drops a body that is not valid JSON or cannot be structured, so the client
  never gets an answer; we answer ParseError / InvalidRequest / InvalidParams instead and keep
  serving. It also reads stdin from a pool thread that can block interpreter exit; ours reads it on
  the event loop (or, where that cannot be, a daemon thread).
- pygls logs every error response with a traceback; expected application errors are not bugs.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import logging
import os
import re
import select
import socket
import stat
import sys
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from typing import Any

import orjson
from cattrs import Converter
from cattrs.errors import BaseValidationError
from cattrs.v import transform_error
from lsprotocol import types
from lsprotocol.converters import get_converter
from pygls.exceptions import JsonRpcException, JsonRpcRequestCancelled
from pygls.protocol import JsonRPCNotification, JsonRPCRequestMessage, JsonRPCResponseMessage
from pygls.protocol.language_server import LanguageServerProtocol, lsp_method

from compactd.session.file import write_all, write_all_parts

from .answers import EncodedAnswer
from .errors import Code, RpcError

log = logging.getLogger("compactd.rpc")

# The largest message body accepted (bytes). A frame whose Content-Length is larger is answered
# with InvalidRequest (`"id": null`) and its body is skipped as it arrives, never buffered, so a
# client cannot make the daemon hold unbounded memory. Override with COMPACTD_MAX_MESSAGE_BYTES.
DEFAULT_MAX_MESSAGE_BYTES = 64 * 1024 * 1024
MAX_MESSAGE_ENV = "COMPACTD_MAX_MESSAGE_BYTES"


def max_message_bytes(env: dict[str, str] | None = None) -> int:
    raw = (env if env is not None else os.environ).get(MAX_MESSAGE_ENV, "")
    if raw.strip().isdigit() and int(raw) > 0:
        return int(raw)
    if raw:
        log.warning("%s=%r is not a positive integer; using %d", MAX_MESSAGE_ENV, raw[:40],
                    DEFAULT_MAX_MESSAGE_BYTES)
    return DEFAULT_MAX_MESSAGE_BYTES


MAX_BODY = DEFAULT_MAX_MESSAGE_BYTES  # kept for importers; the reader uses its own limit


def make_converter() -> Converter:
    """lsprotocol's converter, but params/results of untyped (custom) messages stay plain JSON."""
    converter = get_converter()

    def request(obj: dict[str, Any], cls: type) -> Any:
        return cls(id=obj["id"], method=obj["method"], jsonrpc=obj["jsonrpc"], params=obj.get("params"))

    def notification(obj: dict[str, Any], cls: type) -> Any:
        return cls(method=obj["method"], jsonrpc=obj["jsonrpc"], params=obj.get("params"))

    def response(obj: dict[str, Any], cls: type) -> Any:
        return cls(id=obj["id"], jsonrpc=obj["jsonrpc"], result=obj.get("result"))

    converter.register_structure_hook(JsonRPCRequestMessage, request)
    converter.register_structure_hook(JsonRPCNotification, notification)
    converter.register_structure_hook(JsonRPCResponseMessage, response)
    return converter


class CompactdProtocol(LanguageServerProtocol):
    """LanguageServerProtocol with our error handling and `experimental` capabilities."""

    experimental: dict[str, Any] | None = None
    # Requests that reached a handler before `initialize` are refused (LSP rule).
    initialized_once = False

    @lsp_method(types.INITIALIZE)
    def lsp_initialize(self, params: types.InitializeParams):  # type: ignore[override]
        result = yield from super().lsp_initialize(params)
        self.initialized_once = True
        caps = result.capabilities
        # We serve no documents or commands; do not advertise pygls' built-in ones.
        caps.text_document_sync = None
        caps.execute_command_provider = None
        if self.experimental is not None:
            caps.experimental = self.experimental
        return result

    @lsp_method(types.EXIT)
    def lsp_exit(self, *args: Any) -> None:  # type: ignore[override]
        """Stop the serve loop (pygls would sys.exit() from inside a loop callback)."""
        stop = getattr(self._server, "stop", None)
        if stop is not None:
            stop(0 if self._shutdown else 1)

    def _send_handler_result(self, future: Future[Any], *, msg_id: Any) -> None:  # type: ignore[override]
        self._request_futures.pop(msg_id, None)
        if future.cancelled():
            error: JsonRpcException = JsonRpcRequestCancelled(f'Request "{msg_id}" was cancelled')
            self._send_response(msg_id, error=error.to_response_error())
            return
        exc = future.exception()
        if exc is None:
            self._send_response(msg_id, result=future.result())
            return
        if isinstance(exc, JsonRpcException):
            log.info("request %s failed: %s (%s)", msg_id, exc.message, exc.code)
            self._send_response(msg_id, error=exc.to_response_error())
            return
        log.error("request %s: unexpected error", msg_id, exc_info=exc)
        internal = RpcError(Code.INTERNAL_ERROR, f"Internal error: {type(exc).__name__}: {exc}")
        self._send_response(msg_id, error=internal.to_response_error())

    def _send_response(self, msg_id: Any, result: Any = None, error: Any = None) -> None:  # type: ignore[override]
        """Results of our own methods are plain JSON: encoded by orjson in one C call instead of
        cattrs walking every item and `json.dumps` escaping every non-ASCII character (a dry run
        on a long session answers megabytes). Anything orjson refuses (typed LSP results, a lone
        surrogate a client sent, an integer beyond 64 bits) takes pygls' way."""
        if isinstance(result, EncodedAnswer):  # encoded where it was built (answers.py)
            if error is None and self.writer is not None:
                # The id may be anything a client sent (json.dumps takes ids orjson refuses).
                head = b'{"jsonrpc":"2.0","id":%s,"result":' % (
                    b"%d" % msg_id if type(msg_id) is int else json.dumps(msg_id).encode())
                frame = (b"Content-Length: %d\r\n\r\n" % (len(head) + result.size + 1) + head, *result.parts, b"}")
                write_parts = getattr(self.writer, "write_parts", None)
                if write_parts is not None:  # the answer's bytes go out as they are, not copied twice
                    write_parts(frame)
                else:
                    self.writer.write(b"".join(frame))
                return
            result = json.loads(result.body)  # (orjson refuses the escape of a lone surrogate)
        if error is None and msg_id not in self._result_types and self.writer is not None:
            try:
                body = orjson.dumps({"jsonrpc": "2.0", "id": msg_id, "result": result})
            except TypeError:  # (also orjson's 254-level depth limit)
                problem = self._unencodable(result)
                if problem is not None:  # pygls would log it where no one looks and answer nothing
                    log.warning("answer to %r not sent: %s", msg_id, problem)
                    result, error = None, types.ResponseError(
                        code=int(Code.INVALID_SESSION_FILE),
                        message=f"The answer could not be encoded as JSON: {problem}")
            else:
                self.writer.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
                return
        super()._send_response(msg_id, result=result, error=error)

    def notify(self, method: str, params: Any | None = None) -> None:
        """Our notifications (`session/didChange` after every append, progress) are plain JSON:
        encoded by orjson in one call, as answers are (`_send_response`), instead of pygls'
        message object, cattrs and `json.dumps` (a didChange: 3 against 47 us). Typed LSP
        params and anything orjson refuses take pygls' way."""
        if self.writer is not None and (params is None or type(params) is dict):
            try:
                body = orjson.dumps({"jsonrpc": "2.0", "method": method, "params": params})
            except TypeError:
                pass
            else:
                self.writer.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
                return
        super().notify(method, params)

    def _unencodable(self, result: Any) -> str | None:
        """Why pygls' encoder would fail on `result`, or None when it would not."""
        try:
            json.dumps(result, default=self._serialize_message)
        except RecursionError:
            return "it holds data nested too deeply (about 1000 levels, e.g. an entry of the session file)"
        except (TypeError, ValueError) as exc:
            return f"{type(exc).__name__}: {exc}"
        return None

    def _check_handler_result(self, future: Future[Any]) -> None:  # type: ignore[override]
        if not future.cancelled() and (exc := future.exception()) is not None:
            log.error("notification handler failed", exc_info=exc)

    # --- input -------------------------------------------------------------------------------

    def send_error(self, msg_id: Any, code: Code, message: str) -> None:
        if msg_id is None:  # JSON-RPC wants an explicit `"id": null` when the id is unknown
            self._send_data({"jsonrpc": "2.0", "id": None, "error": {"code": int(code), "message": message}})
            return
        self._send_response(msg_id, error=types.ResponseError(code=int(code), message=message))

    def reject_oversized(self, length: int, limit: int) -> None:
        """A frame larger than the limit: answer (its id is unknown) and let the reader skip it."""
        log.warning("message of %d bytes refused (limit %d bytes, %s)", length, limit, MAX_MESSAGE_ENV)
        self._send_data({"jsonrpc": "2.0", "id": None, "error": {
            "code": int(Code.INVALID_REQUEST),
            "message": f"Message too large: {length} bytes (limit {limit} bytes)",
            "data": {"length": length, "maxBytes": limit}}})

    def receive_body(self, body: bytes) -> bool:
        """One framed message: parse, validate the envelope, dispatch. Never raises; returns False
        (answering nothing) when the body is not JSON: the reader then looks for where its framing
        went wrong and answers what is left with `answer_unparsable`."""
        try:
            data = json.loads(body)
        except (ValueError, UnicodeDecodeError):
            return False
        except RecursionError:  # the C scanner's depth guard (~1000 levels)
            msg_id = salvage_id(body)
            log.warning("message nested too deeply refused (id %r, %d bytes)", msg_id, len(body))
            self.send_error(msg_id, Code.INVALID_REQUEST,
                            "Invalid request: JSON nested too deeply (about 1000 levels)")
            return True
        self._dispatch(data)
        return True

    def answer_unparsable(self, body: bytes) -> None:
        """ParseError for a body (or the part of one) that is not JSON, with its id when one can be
        read, so a client waiting for that request is not left waiting."""
        try:
            json.loads(body)
            reason = "not JSON"
        except (ValueError, UnicodeDecodeError) as exc:
            reason = str(exc)
        except RecursionError:
            reason = "nested too deeply"
        msg_id = salvage_id(body)
        log.warning("parse error on input (id %r): %s", msg_id, reason)
        self.send_error(msg_id, Code.PARSE_ERROR, f"Parse error: {reason}")

    def _dispatch(self, data: Any) -> None:
        if not isinstance(data, dict):
            kind = "batch requests are not supported" if isinstance(data, list) else "expected a JSON object"
            self.send_error(None, Code.INVALID_REQUEST, f"Invalid request: {kind}")
            return
        msg_id: Any = data.get("id")  # (checked below before use)
        method: Any = data.get("method")
        is_request = "id" in data and "method" in data
        if data.get("jsonrpc") != "2.0" or ("method" in data and not isinstance(method, str)) or (
            "id" in data and not isinstance(msg_id, (str, int)) and msg_id is not None
        ):
            log.warning("invalid JSON-RPC envelope (keys %s)", sorted(data)[:10])
            if "id" in data and ("method" in data or "error" not in data and "result" not in data):
                safe_id = msg_id if isinstance(msg_id, (str, int)) else None
                self.send_error(safe_id, Code.INVALID_REQUEST, "Invalid request: not a JSON-RPC 2.0 message")
            return
        if "method" not in data and "id" not in data:
            log.warning("message with neither method nor id ignored")
            return
        if self._shutdown and is_request and method != types.EXIT:
            self.send_error(msg_id, Code.INVALID_REQUEST, "Server is shutting down")
            return
        if is_request and method != types.EXIT and _is_notification(method):
            # pygls would run it and never answer (or blame its params); the client would wait forever.
            self.send_error(msg_id, Code.INVALID_REQUEST,
                            f"Invalid request: {method} is a notification; send it without an id")
            return
        if is_request and not self.initialized_once and method not in (types.INITIALIZE, types.SHUTDOWN):
            self.send_error(msg_id, Code.SERVER_NOT_INITIALIZED, "Server not initialized: send initialize first")
            return
        if is_request and self.get_message_type(method) is None:
            # One of our own methods: its params stay plain JSON, so what pygls would do (structure
            # an envelope, then find its kind through runtime Protocol checks, ~15 us) comes down
            # to this call. LSP's typed requests take pygls' way below.
            contextvars.copy_context().run(self._handle_request, msg_id, method, data.get("params"))
            return
        if not is_request and method in _CANCELS and not _valid_cancel(method, data.get("params")):
            return
        try:
            message = self.structure_message(data)
        except JsonRpcException as exc:
            if is_request:
                self.send_error(msg_id, Code.INVALID_PARAMS, f"Invalid params for {method}: {_cause(exc)}")
            else:
                log.warning("could not read %s message: %s", method or "response", _cause(exc))
            return
        try:
            self.handle_message(message)
        except SystemExit:
            raise
        except Exception as exc:  # a handler must never take the daemon down
            log.error("failed to handle %s", method or "message", exc_info=exc)
            if is_request:
                self.send_error(msg_id, Code.INTERNAL_ERROR, f"Internal error: {type(exc).__name__}")


# Cancel notifications and the field that names what to cancel: pygls looks it up in a dict, so
# an object or a list there raised TypeError (a traceback in the log for a client's mistake).
_CANCELS = {"$/cancelRequest": "id", types.WINDOW_WORK_DONE_PROGRESS_CANCEL: "token"}


def _valid_cancel(method: str, params: Any) -> bool:
    field = _CANCELS[method]
    value = params.get(field) if isinstance(params, dict) else None
    if isinstance(value, (str, int)) and not isinstance(value, bool):
        return True
    log.warning("%s ignored: %s must be a string or an integer, not %s", method, field,
                "missing" if value is None else type(value).__name__)
    return False


def _is_notification(method: Any) -> bool:
    """An LSP client-to-server notification (lsprotocol knows its message type)."""
    kinds = types.METHOD_TO_TYPES.get(method) if isinstance(method, str) else None
    return bool(kinds) and kinds[0].__name__.endswith("Notification")  # type: ignore[index]


def _cause(exc: BaseException) -> str:
    """Why a message could not be structured, naming the fields (`capabilities: required field
    missing`) rather than cattrs' "While structuring InitializeRequest (1 sub-exception)"."""
    cause = exc.__cause__
    if isinstance(cause, BaseValidationError):
        problems = []
        for item in transform_error(cause):
            what, _, where = item.rpartition(" @ ")
            path = where.removeprefix("$").removeprefix(".").removeprefix("params").removeprefix(".")
            problems.append(f"{_camel_path(path) or 'params'}: {what or item}")
        if problems:
            return "; ".join(problems)
    text = str(cause) if cause is not None else str(exc)
    return text.splitlines()[0] if text else type(exc).__name__


def _camel_path(path: str) -> str:
    """`capabilities.text_document` → `capabilities.textDocument` (the names on the wire)."""
    return ".".join(re.sub(r"_([a-z])", lambda m: m.group(1).upper(), part) for part in path.split("."))


# --- framing ---------------------------------------------------------------------------------

_HEADER = re.compile(rb"^([A-Za-z0-9-]+)\s*:\s*(.*)$")
_NEXT_FRAME = b"Content-Length:"
# A frame header inside a body still arriving: raw CR/LF never occur inside a JSON string and
# `Content-Length:` is not JSON outside one, so this is the next frame, not part of the body.
_RAW_HEADER = re.compile(rb"Content-Length:[ \t]*\d+\r?\n")
_RAW_HEADER_SPAN = 48  # bytes before its line feed that a `_RAW_HEADER` may take


class FrameReader:
    """Incremental LSP base-protocol parser: headers, blank line, Content-Length bytes of body.

    It resynchronizes after bad framing instead of losing the stream (every request that arrives
    whole is answered once): lines that are not headers are skipped (a header glued to the end of
    garbage is still found), a bad Content-Length drops its header block, and a body that is not
    JSON is taken apart — a JSON value at its start is still handled, the bytes from the first
    frame header in it (or the start of one at its end) are read again as frames, and what is
    left is answered with ParseError (its id, when one can be read). A body still arriving that
    holds a frame header is cut there at once: the declared length was too long (or the frame had
    no body), and the client may be waiting for the answer before it writes more.
    """

    def __init__(self, on_body: Callable[[bytes], bool], *, max_bytes: int | None = None,
                 on_oversized: Callable[[int, int], None] | None = None,
                 on_garbage: Callable[[bytes], None] | None = None) -> None:
        self._buffer = bytearray()
        self._length: int | None = None
        self._in_headers = False
        self._bad_header = False
        self._on_body = on_body  # returns False (and answers nothing) when the body is not JSON
        self._on_garbage = on_garbage  # a body or part of one that is not JSON: answer ParseError
        self.max_bytes = max_bytes if max_bytes is not None else max_message_bytes()
        self._on_oversized = on_oversized  # (declared length, limit): answer the client
        self._oversized: int | None = None  # Content-Length above the limit in this header block
        self._skip = 0  # body bytes of a refused frame still to discard
        self._scanned = 0  # bytes of an incomplete body already searched for a frame header

    def feed(self, data: bytes) -> None:
        self._buffer += data
        while self._step():
            pass

    def _deliver(self, body: bytes) -> None:
        if self._on_body(body):
            return
        self._recover(body)

    def _recover(self, body: bytes) -> None:
        """A body that is not JSON: handle a JSON value at its start, read what follows from the
        first frame header (or a header's beginning at the very end) as frames again, and answer
        ParseError for the rest."""
        cut = body.find(_NEXT_FRAME)
        if cut < 0:
            cut = len(body) - _partial_header_at_end(body)
        head, rest = body[:cut], body[cut:]
        if head.strip():
            end = _json_prefix(head)
            if end and self._on_body(head[:end]):
                if head[end:].strip():
                    log.warning("skipping %d bytes after a message whose Content-Length was too long",
                                len(head) - end)
            elif self._on_garbage is not None:
                self._on_garbage(head)
        if rest:
            log.warning("frame header found inside a body (its Content-Length was wrong); reading from it")
            self._buffer[:0] = rest

    def _step(self) -> bool:
        if self._skip:
            dropped = min(self._skip, len(self._buffer))
            del self._buffer[:dropped]
            self._skip -= dropped
            return self._skip == 0 and bool(self._buffer)
        if self._length is not None and not self._in_headers:
            if len(self._buffer) < self._length:
                return self._cut_incomplete()
            body = bytes(self._buffer[: self._length])
            del self._buffer[: self._length]
            self._length = None
            self._scanned = 0
            self._deliver(body)
            return True
        newline = self._buffer.find(b"\n")
        if newline < 0:
            if len(self._buffer) > 65536:  # a header line this long is garbage
                log.warning("discarding %d bytes of unframed input", len(self._buffer))
                self._buffer.clear()
            return False
        line = bytes(self._buffer[:newline]).rstrip(b"\r")
        del self._buffer[: newline + 1]
        if not line.strip():
            if self._in_headers:
                self._in_headers = False
                if self._oversized is not None:
                    self._skip, self._oversized = self._oversized, None
                    self._bad_header = False
                    if self._on_oversized is not None:
                        self._on_oversized(self._skip, self.max_bytes)
                    return True
                if self._length is None and not self._bad_header:
                    log.warning("header block without Content-Length ignored")
                self._bad_header = False
            return True
        match = _HEADER.match(line)
        if not match:
            glued = line.find(_NEXT_FRAME)
            if glued > 0:
                log.warning("skipping %d bytes of unframed input before a header", glued)
                self._buffer[:0] = line[glued:] + b"\r\n"
                return True
            log.warning("ignoring unframed input line (%d bytes)", len(line))
            self._in_headers = False
            self._length = None
            self._oversized = None
            return True
        self._in_headers = True
        name, value = match.group(1).lower(), match.group(2).strip()
        if name == b"content-length":
            if value.isdigit() and int(value) > self.max_bytes:
                self._length = None
                self._oversized = int(value)
            elif value.isdigit():
                self._length = int(value)
                self._oversized = None
            else:
                log.warning("invalid Content-Length %r ignored", value[:40])
                self._length = None
                self._bad_header = True
        return True

    def _cut_incomplete(self) -> bool:
        """The body is not all here: if what has arrived holds a frame header, the body ends
        there (handled now, the header read as the next frame). Each byte is searched once, for a
        line feed (memchr speed; compact JSON has none); only a line ending in a digit is checked."""
        buffer = self._buffer
        newline = buffer.find(b"\n", self._scanned)
        self._scanned = len(buffer)
        while newline >= 0:
            if newline and buffer[newline - 1 - (buffer[newline - 1] == 13 and newline > 1)] in _DIGITS:
                found = _RAW_HEADER.search(buffer, max(0, newline - _RAW_HEADER_SPAN), newline + 1)
                if found is not None:
                    return self._cut_at(found.start())
            newline = buffer.find(b"\n", newline + 1)
        return False

    def _cut_at(self, cut: int) -> bool:
        body = bytes(self._buffer[:cut])
        del self._buffer[:cut]
        self._length = None
        self._scanned = 0
        if body.strip():
            self._deliver(body)
        else:
            log.warning("frame without a body (Content-Length but no bytes before the next header)")
        return True


_DIGITS = frozenset(b"0123456789")


def _partial_header_at_end(body: bytes) -> int:
    """How many bytes at the end of `body` are the beginning of a frame header (`Content-Le`)."""
    for size in range(min(len(_NEXT_FRAME) - 1, len(body)), 0, -1):
        if body.endswith(_NEXT_FRAME[:size]):
            return size
    return 0


_DECODER = json.JSONDecoder()


def _json_prefix(data: bytes) -> int:
    """The length of the JSON value at the start of `data` (leading whitespace included), or 0."""
    try:
        text = data.decode()
        start = len(text) - len(text.lstrip())
        _, end = _DECODER.raw_decode(text, start)
    except (ValueError, RecursionError):
        return 0
    return len(text[:end].encode())


def salvage_id(body: bytes) -> int | str | None:
    """The `id` of a request whose body cannot be parsed (cut short, nested too deeply), read from
    its top-level object without recursion; None when there is none to read."""
    text = body.decode(errors="replace")
    pos = len(text) - len(text.lstrip())
    if not text.startswith("{", pos):
        return None
    depth, size = 0, len(text)
    while pos < size:
        char = text[pos]
        if char == '"':
            end = pos + 1
            while True:
                end = text.find('"', end)
                if end < 0:
                    return None
                back = end - 1
                while text[back] == "\\":
                    back -= 1
                if (end - 1 - back) % 2 == 0:  # not an escaped quote
                    break
                end += 1
            after = end + 1
            while after < size and text[after] in " \t\r\n":
                after += 1
            if depth == 1 and text.startswith(":", after) and text[pos + 1:end] == "id":
                try:
                    value, _ = _DECODER.raw_decode(text[after + 1:].lstrip())
                except (ValueError, RecursionError):
                    return None
                return value if isinstance(value, (str, int)) and not isinstance(value, bool) else None
            pos = end + 1
            continue
        if char in "{[":
            depth += 1
        elif char in "}]":
            depth -= 1
            if depth == 0:
                return None
        pos += 1
    return None


INPUT_CHUNK_BYTES = 1 << 20

# Input read ahead while the client is not reading its answers (bytes, besides the one frame the
# reader is assembling): past it the daemon stops reading until the client reads, so a client that
# writes and never reads cannot grow the daemon without bound (it grew to 1.68 GiB on 1.5 GiB
# written). Override with COMPACTD_MAX_INPUT_BUFFER_BYTES.
DEFAULT_MAX_INPUT_BUFFER_BYTES = 16 * 1024 * 1024
MAX_INPUT_BUFFER_ENV = "COMPACTD_MAX_INPUT_BUFFER_BYTES"


def max_input_buffer_bytes(env: dict[str, str] | None = None) -> int:
    raw = (env if env is not None else os.environ).get(MAX_INPUT_BUFFER_ENV, "")
    if raw.strip().isdigit() and int(raw) > 0:
        return int(raw)
    if raw:
        log.warning("%s=%r is not a positive integer; using %d", MAX_INPUT_BUFFER_ENV, raw[:40],
                    DEFAULT_MAX_INPUT_BUFFER_BYTES)
    return DEFAULT_MAX_INPUT_BUFFER_BYTES


def _log_input_full(held: int, limit: int) -> None:
    log.warning("client is not reading its answers and %d bytes of its input wait (limit %d bytes, %s); "
                "not reading more until it reads", held, limit, MAX_INPUT_BUFFER_ENV)


def start_stdin_reader(loop: asyncio.AbstractEventLoop, reader: FrameReader,
                       on_eof: Callable[[], None]) -> LoopInput | None:
    """Read stdin on the event loop when it is a pipe or a socket of its own (what editors spawn
    with): a request then reaches its handler in the thread that reads it. Handed over from a
    reader thread, each request waited for the loop to wake and take the interpreter lock
    (interleaved daemons: a context on the 1.0 MB session 0.56-0.73 against 0.28-0.36 ms, on the
    2 KB file 0.10-0.15 against 0.08 ms). Anything else (a terminal, a file, Windows, stdin and
    stdout on one socket, whose shared non-blocking flag would turn stdout's writes into partial
    ones) takes a reader thread, and None is returned."""
    fd = sys.stdin.fileno()
    if not _own_pipe_or_socket(fd):
        start_stdin_thread(loop, reader, on_eof)
        return None
    return LoopInput(loop, fd, reader, on_eof)


class LoopInput:
    """stdin read by the event loop. The loop also writes the answers, so while an answer waits
    for the client to read it (`wait_writable`), the requests the client writes meanwhile are
    still taken in, to be handled once the write is done: a client that writes a large request
    before reading a large answer would otherwise wait for the daemon while it waits for the
    client."""

    def __init__(self, loop: asyncio.AbstractEventLoop, fd: int, reader: FrameReader,
                 on_eof: Callable[[], None]) -> None:
        self._loop = loop
        self._fd = fd
        self._reader = reader
        self._on_eof = on_eof
        self._open = True
        self._lock = threading.Lock()  # reads and their order in `_pending`
        self._pending: list[bytes] = []
        self._held = 0  # bytes in `_pending`
        self._limit = max_input_buffer_bytes()
        self._full = False  # logged once per time the limit is reached
        os.set_blocking(fd, False)
        loop.add_reader(fd, self._on_readable)

    def _take(self) -> None:
        """Read what has arrived into `_pending`, in the order it came."""
        with self._lock:
            if not self._open:
                return
            try:
                chunk = os.read(self._fd, INPUT_CHUNK_BYTES)
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                chunk = b""
            if chunk:
                self._pending.append(chunk)
                self._held += len(chunk)
                return
            self._open = False
        self._loop.call_soon_threadsafe(self._end)

    def _end(self) -> None:
        self._loop.remove_reader(self._fd)
        self._feed()
        self._on_eof()

    def _on_readable(self) -> None:
        self._take()
        self._feed()

    def _feed(self) -> None:
        with self._lock:
            chunks, self._pending, self._held = self._pending, [], 0
        for chunk in chunks:
            self._reader.feed(chunk)

    def wait_writable(self, out_fd: int) -> None:
        """Until `out_fd` takes more bytes, take in what the client writes (handled afterwards)."""
        while True:
            room = self._held < self._limit
            if not room and not self._full:
                self._full = True
                _log_input_full(self._held, self._limit)
            watched = [self._fd] if self._open and room else []
            readable, writable, _ = select.select(watched, [out_fd], [])
            if writable:
                self._full = False
                return
            if readable:
                self._take()
                self._loop.call_soon_threadsafe(self._feed)


def _pipe_or_socket(fd: int) -> bool:
    """`fd` is a pipe or a socket on a POSIX system (what can be read or written non-blocking)."""
    if os.name != "posix":
        return False
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


def _own_pipe_or_socket(fd: int) -> bool:
    """A pipe or socket that is not also the protocol's stdout (sys.stdout is stderr while
    serving)."""
    if not _pipe_or_socket(fd):
        return False
    try:
        out = sys.__stdout__.fileno() if sys.__stdout__ is not None else -1
        return not os.path.samestat(os.fstat(fd), os.fstat(out))
    except (AttributeError, OSError, ValueError):  # no stdout descriptor: nothing shares it
        return True


def start_stdin_thread(loop: asyncio.AbstractEventLoop, reader: FrameReader, on_eof: Callable[[], None]) -> None:
    """Read stdin on a daemon thread (a blocked read must not keep the process alive)."""
    fd = sys.stdin.fileno()
    limit = max_input_buffer_bytes()
    queued = 0  # bytes handed to the loop and not yet fed (the limit above applies)
    taken = threading.Condition()

    def feed(chunk: bytes) -> None:
        nonlocal queued
        with taken:
            queued -= len(chunk)
            taken.notify()
        reader.feed(chunk)

    def pump() -> None:
        nonlocal queued
        while True:
            with taken:
                if queued >= limit:
                    _log_input_full(queued, limit)
                    taken.wait_for(lambda: queued < limit)
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                chunk = b""
            if not chunk:
                loop.call_soon_threadsafe(on_eof)
                return
            with taken:
                queued += len(chunk)
            loop.call_soon_threadsafe(feed, chunk)

    threading.Thread(target=pump, name="compactd-stdin", daemon=True).start()


# A dry run with its history text is hundreds of kilobytes (megabytes on long paths). Through a
# pipe of the default 64 KB (a socket's ~200 KB, what Node and so VS Code spawn with) the writer
# blocks until the client has read each buffer's worth: a pair of wake-ups per chunk, ~165 for the
# 10 MB of a dry run on 20k entries uncompacted (98 against 107 ms a request with 1 MB, interleaved
# daemons). The kernel holds the memory only while data waits to be read.
OUTPUT_BUFFER_BYTES = 1 << 20


def widen_output(fd: int, size: int = OUTPUT_BUFFER_BYTES) -> int | None:
    """Ask the kernel for `size` bytes of buffer on the pipe or socket `fd` (capped by
    /proc/sys/fs/pipe-max-size or net.core.wmem_max): the size now, or None when `fd` is neither
    or the kernel refuses (a user's pipe quota spent). The default size still serves, only slower
    for large answers."""
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISSOCK(mode):
            with socket.socket(fileno=os.dup(fd)) as sock:  # a duplicate: closing it keeps `fd`
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, size)  # capped, not refused
                return int(sock.getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF))
        if not stat.S_ISFIFO(mode):
            return None
        import fcntl  # not on Windows, where stdio is never a FIFO

        set_size = getattr(fcntl, "F_SETPIPE_SZ", None)  # Linux only
        if set_size is None:
            return None
        try:
            return int(fcntl.fcntl(fd, set_size, size))
        except PermissionError:  # over pipe-max-size for an unprivileged process
            return int(fcntl.fcntl(fd, set_size, min(size, _pipe_max_size())))
    except OSError:
        return None


def _pipe_max_size() -> int:
    try:
        with open("/proc/sys/fs/pipe-max-size", encoding="ascii") as file:
            return int(file.read())
    except (OSError, ValueError):
        return 65536


class FdWriter:
    """pygls' writer interface over a file descriptor: `os.write` until every byte is out.
    The buffered `sys.stdout.buffer` loses the rest of a large write that a stop signal interrupts
    (SIGSTOP/SIGCONT, as a debugger or profiler attaching sends): answers were cut at the pipe's
    64 KB and the client's stream desynchronized (tests/e2e/test_garbage.py)."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._lock = threading.Lock()  # one frame at a time, whole
        self._when_full: Callable[[], None] | None = None
        widen_output(fd)

    def follow(self, loop_input: LoopInput) -> None:
        """Write without blocking the loop's reading of stdin: while the client has not read
        enough of an answer, its requests are still taken in (`LoopInput.wait_writable`). Only on a
        pipe or socket: a terminal's flag would outlive the daemon, a file is never full."""
        if _pipe_or_socket(self._fd):  # (not stdin's: start_stdin_reader checked)
            os.set_blocking(self._fd, False)
            self._when_full = lambda: loop_input.wait_writable(self._fd)

    def close(self) -> None:
        os.close(self._fd)

    def write(self, data: bytes) -> None:
        with self._lock:
            write_all(self._fd, data, self._when_full)

    def write_parts(self, parts: Sequence[bytes]) -> None:
        """One frame given in parts (header, a large answer's bytes, ...), written without
        joining them first."""
        with self._lock:
            write_all_parts(self._fd, parts, self._when_full)


__all__ = ["CompactdProtocol", "FdWriter", "FrameReader", "LoopInput", "make_converter", "start_stdin_reader",
           "start_stdin_thread", "widen_output"]
