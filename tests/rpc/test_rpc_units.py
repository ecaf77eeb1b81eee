"""In-process checks of the daemon's building blocks: framing, params validation, error mapping,
log redaction. (Everything end to end lives in tests/e2e.)"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from compactd.engine.busy import BusyError
from compactd.engine.compactor import CompactionError
from compactd.engine.registry import SessionRegistry
from compactd.engine.settings import SettingsError
from compactd.rpc.errors import Code, RpcError, to_rpc_error
from compactd.rpc.logs import RedactingFormatter, redact
from compactd.rpc.protocol import FrameReader
from compactd.rpc.schema import AppendParams, CompactParams, ContextParams, parse
from compactd.session import EntryNotFoundError, Session


def frame(obj: object, delta: int = 0) -> bytes:
    body = json.dumps(obj).encode()
    return b"Content-Length: %d\r\n\r\n" % (len(body) + delta) + body


class Collector:
    def __init__(self) -> None:
        self.bodies: list[object] = []
        self.bad = 0

    def __call__(self, body: bytes) -> bool:
        try:
            self.bodies.append(json.loads(body))
        except ValueError:
            self.bad += 1
            return False
        return True


def test_frames_split_across_reads_and_garbage_between() -> None:
    seen = Collector()
    reader = FrameReader(seen)
    data = b"noise\r\n" + frame({"a": 1}) + b"X-Junk: 1\r\n\r\n" + frame({"b": 2}) + b"Content-Length: x\r\n\r\n"
    for i in range(0, len(data), 3):  # byte-by-byte-ish delivery
        reader.feed(data[i:i + 3])
    reader.feed(frame({"c": 3}))
    assert seen.bodies == [{"a": 1}, {"b": 2}, {"c": 3}] and seen.bad == 0


def test_frames_resynchronize_after_wrong_lengths() -> None:
    seen = Collector()
    reader = FrameReader(seen)
    reader.feed(frame({"short": True}, -2) + frame({"next": 1}))
    reader.feed(frame({"long": True}, 25) + frame({"after": 2}))
    assert seen.bodies == [{"next": 1}, {"long": True}, {"after": 2}]
    assert seen.bad == 2


def test_params_errors_name_the_field() -> None:
    with pytest.raises(RpcError) as info:
        parse(CompactParams, {})
    assert info.value.code == Code.INVALID_PARAMS and info.value.message == "sessionId: Field required"
    with pytest.raises(RpcError) as info:
        parse(CompactParams, {"sessionId": "s", "workDoneToken": 1.5})
    assert info.value.message.startswith("workDoneToken")
    with pytest.raises(RpcError) as info:
        parse(AppendParams, {"sessionId": "s", "entries": [{"type": "label", "label": "x"}]})
    assert "entries.0.label.targetId: Field required" in info.value.message


def test_leaf_id_omitted_null_and_given_are_distinct() -> None:
    assert parse(ContextParams, {"sessionId": "s"}).leaf_given is False
    explicit_null = parse(ContextParams, {"sessionId": "s", "leafId": None})
    assert explicit_null.leaf_given is True and explicit_null.leaf_id is None


def test_appended_entries_keep_their_raw_form() -> None:
    raw = {"sessionId": "s", "entries": [{"type": "custom", "customType": "x", "data": {"class": 1, "a-b": 2}}]}
    params = parse(AppendParams, raw)
    assert params.raw()["entries"][0]["data"] == {"class": 1, "a-b": 2}


def test_engine_errors_map_to_documented_codes() -> None:
    cases = [
        (EntryNotFoundError("e1"), Code.ENTRY_NOT_FOUND),
        (BusyError("s", "compaction in progress"), Code.SESSION_BUSY),
        (CompactionError("Already compacted", "already_compacted"), Code.NOTHING_TO_COMPACT),
        (CompactionError("Nothing to compact (session too small)", "nothing_to_compact"), Code.NOTHING_TO_COMPACT),
        (CompactionError("Compaction cancelled", "cancelled"), Code.CANCELLED_BY_HOOK),
        (CompactionError.failed("boom"), Code.SUMMARIZATION_FAILED),
        (SettingsError("compaction.reserveTokens", "bad"), Code.SETTINGS_ERROR),
        (IsADirectoryError(21, "Is a directory", "/tmp"), Code.FILE_ERROR),
    ]
    for exc, code in cases:
        assert to_rpc_error(exc).code == code, exc
    unknown = to_rpc_error(ZeroDivisionError("x"))
    assert unknown.code == Code.INTERNAL_ERROR and "ZeroDivisionError" in unknown.message


def test_registry_reopens_same_path_and_refuses_conflicts(tmp_path) -> None:
    registry = SessionRegistry()
    path = tmp_path / "a.jsonl"
    first = Session.create(str(tmp_path), path, session_id="same")
    handle = registry.add(first)
    assert registry.add(Session.create(str(tmp_path), path, session_id="same")) is handle
    with pytest.raises(Exception, match="already open"):
        registry.add(Session.create(str(tmp_path), tmp_path / "b.jsonl", session_id="same"))
    assert registry.remove("same") is handle and len(registry) == 0


def test_secrets_are_masked_in_logs() -> None:
    text = ('calling with {"apiKey": "sk-abcdefghijklmnop1234", "model": "x"} '
            "Authorization: Bearer abcdefghijklmnopqrstuvwxyz api_key=hunter2secret sk-proj-ZZZZZZZZZZZZZZZZ")
    masked = redact(text)
    for secret in ("sk-abcdefghijklmnop1234", "abcdefghijklmnopqrstuvwxyz", "hunter2secret", "sk-proj-ZZZZZZZZZZZZZZZZ"):
        assert secret not in masked
    assert '"model": "x"' in masked
    record = logging.LogRecord("compactd", logging.INFO, __file__, 1, "key %s", ("sk-live-0123456789abcdef",), None)
    assert "sk-live-0123456789abcdef" not in RedactingFormatter("%(message)s").format(record)


def test_a_frame_in_parts_arrives_whole_through_a_full_pipe() -> None:
    # Larger than the pipe's buffer: writev takes it in several partial writes.
    import os
    import threading

    from compactd.rpc.protocol import FdWriter

    # The writer widens its pipe (to 1 MB where the kernel allows): more than that still comes
    # out in partial writes.
    parts = [b"Content-Length: 3\r\n\r\n", bytes(range(256)) * 5000, b"", b"}" * 70_000]
    read_fd, write_fd = os.pipe()
    received = bytearray()

    def drain() -> None:
        while chunk := os.read(read_fd, 4096):
            received.extend(chunk)

    reader = threading.Thread(target=drain)
    reader.start()
    FdWriter(write_fd).write_parts(parts)
    os.close(write_fd)
    reader.join(10)
    os.close(read_fd)
    assert bytes(received) == b"".join(parts)


def test_thousands_of_parts_arrive_whole_through_a_slow_reader() -> None:
    # A dry run's text is one part per message: more parts than one writev takes (IOV_MAX).
    import os
    import threading
    import time

    from compactd.session.file import write_all_parts

    parts = [b"%d," % n * (n % 7) for n in range(5000)] + [b"x" * 300_000]
    read_fd, write_fd = os.pipe()
    received = bytearray()

    def drain() -> None:
        while chunk := os.read(read_fd, 1000):
            received.extend(chunk)
            time.sleep(0)

    reader = threading.Thread(target=drain)
    reader.start()
    write_all_parts(write_fd, parts)
    os.close(write_fd)
    reader.join(10)
    os.close(read_fd)
    assert bytes(received) == b"".join(parts)


def test_an_answer_with_encoded_texts_is_the_json_of_the_same_answer() -> None:
    from compactd.compaction.serialize import serialize_sourced_json
    from compactd.rpc.answers import EncodedAnswer, encode_answer

    items = [("a", {"role": "user", "content": "é 😀 \"quoted\"\n", "timestamp": 1}),
             ("b", {"role": "user", "content": "half \ud83d alone", "timestamp": 2})]
    text = serialize_sourced_json(items)
    answer = {"firstKeptEntryId": "b", "tokensBefore": 2**70, "previousSummary": "lone \udc00 here",
              "conversationText": text, "turnPrefixText": None, "readFiles": ["/tmp/é"]}
    encoded = encode_answer(answer)
    assert isinstance(encoded, EncodedAnswer)
    assert encoded.size == len(encoded.body)
    decoded = json.loads(encoded.body)
    assert decoded == {**answer, "conversationText": text.value()}
    assert list(decoded) == list(answer)  # members in their order, as the CLI prints them
    assert decoded["conversationText"] == "[User]: é 😀 \"quoted\"\n\n\n[User]: half \ud83d alone"
    plain = encode_answer({"a": 1, "b": [1, 2]})  # nothing encoded already: one orjson call
    assert isinstance(plain, EncodedAnswer) and tuple(plain.parts) == (b'{"a":1,"b":[1,2]}',)


def test_the_answer_pipe_or_socket_is_widened_where_the_kernel_allows(tmp_path: Path) -> None:
    import fcntl
    import os
    import socket

    from compactd.rpc.protocol import OUTPUT_BUFFER_BYTES, widen_output

    read_fd, write_fd = os.pipe()  # what Python's subprocess spawns with
    try:
        size = widen_output(write_fd)
        allowed = min(OUTPUT_BUFFER_BYTES, int(Path("/proc/sys/fs/pipe-max-size").read_text()))
        assert size is not None and size >= allowed
        assert fcntl.fcntl(read_fd, fcntl.F_GETPIPE_SZ) == size  # one buffer, seen from both ends
    finally:
        os.close(read_fd)
        os.close(write_fd)
    ours, theirs = socket.socketpair()  # what Node (so VS Code) spawns with
    with ours, theirs:
        before = ours.getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF)
        allowed = min(OUTPUT_BUFFER_BYTES, int(Path("/proc/sys/net/core/wmem_max").read_text()))
        size = widen_output(ours.fileno())
        assert size == ours.getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF)  # the socket itself, still open
        assert size is not None and size >= allowed and (allowed <= before or size > before)
        ours.sendall(b"still usable")
        assert theirs.recv(64) == b"still usable"
    with open(tmp_path / "out.txt", "wb") as regular:  # `compactd serve > file`: nothing to widen
        assert widen_output(regular.fileno()) is None


def test_an_answer_orjson_refuses_is_still_encoded_where_it_is_built() -> None:
    # A lone surrogate (a damaged file) or an integer beyond 64 bits: the json module's escapes,
    # not a second encoding on the event loop.
    from compactd.rpc.answers import EncodedAnswer, encode_answer

    answer = {"messages": [{"role": "user", "entryId": "half \ud83d alone"}], "tokens": 2**70}
    encoded = encode_answer(answer)
    assert isinstance(encoded, EncodedAnswer)
    assert json.loads(encoded.body) == answer


def test_an_answer_sends_its_encoded_texts_parts_as_they_are() -> None:
    from compactd.compaction.serialize import EncodedJsonString
    from compactd.rpc.answers import EncodedAnswer, encode_answer

    chunks = [b'"' + b"x" * 300_000, b"\\n\\n" + b"y" * 10 + b'"']
    encoded = encode_answer({"before": 1, "conversationText": EncodedJsonString(chunks), "after": None})
    assert isinstance(encoded, EncodedAnswer)
    assert any(part is chunks[0] for part in encoded.parts)  # not copied
    assert any(part is chunks[1] for part in encoded.parts)
    assert encoded.body == b'{"before":1,"conversationText":' + b"".join(chunks) + b',"after":null}'
    assert encoded.size == len(encoded.body)


@pytest.mark.parametrize("msg_id", [7, "req-7", 2**70])
def test_encoded_answers_are_framed_for_any_request_id(msg_id: object) -> None:
    from compactd.rpc.answers import EncodedAnswer
    from compactd.rpc.server import CompactdServer

    class Joined:  # a writer without write_parts (pygls' StdoutWriter)
        def __init__(self) -> None:
            self.data = b""

        def write(self, data: bytes) -> None:
            self.data += data

    class InParts(Joined):
        def write_parts(self, parts: list[bytes]) -> None:
            self.data += b"".join(parts)

    whole = EncodedAnswer.whole(b'{"text":"\\u00e9t\\u00e9"}')
    parts = [b'{"text":', b'"\\u00e9t', "\u00e9\"".encode(), b"}"]
    in_parts = EncodedAnswer(parts, sum(map(len, parts)))
    for writer, answer in ((Joined(), whole), (InParts(), whole), (Joined(), in_parts), (InParts(), in_parts)):
        protocol = CompactdServer().protocol
        protocol.set_writer(writer)
        protocol._send_response(msg_id, result=answer)
        header, _, body = writer.data.partition(b"\r\n\r\n")
        assert header == b"Content-Length: %d" % len(body)
        assert json.loads(body) == {"jsonrpc": "2.0", "id": msg_id, "result": {"text": "été"}}


def test_a_pipe_on_stdin_is_read_on_the_event_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    """A pipe of the daemon's own is read by the event loop itself (no reader thread to hand each
    request over from); frames split across reads are put together and the end of input is seen."""
    import asyncio
    import io
    import os
    import threading

    from compactd.rpc import protocol

    read_fd, write_fd = os.pipe()
    bodies: list[bytes] = []
    threads_before = {t.ident for t in threading.enumerate()}

    async def run() -> None:
        loop = asyncio.get_running_loop()
        ended = asyncio.Event()
        reader = protocol.FrameReader(lambda body: bodies.append(body) is None)
        monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.FileIO(read_fd, closefd=False)))
        protocol.start_stdin_reader(loop, reader, ended.set)
        assert {t.ident for t in threading.enumerate()} == threads_before  # no thread started
        assert not os.get_blocking(read_fd)
        frame = b'Content-Length: 9\r\n\r\n{"a": 12}'
        for part in (frame[:7], frame[7:20], frame[20:] + frame):
            os.write(write_fd, part)
            await asyncio.sleep(0.01)
        os.close(write_fd)
        await asyncio.wait_for(ended.wait(), 5)

    try:
        asyncio.run(run())
    finally:
        os.close(read_fd)
    assert bodies == [b'{"a": 12}', b'{"a": 12}']


def test_notifications_are_framed_json_on_both_ways() -> None:
    """Plain-dict params go out through orjson (UTF-8 as it is, no `\\u` escapes: pygls' json.dumps
    writes those); what orjson refuses (a lone surrogate) and typed LSP params take pygls' way;
    every frame is whole and its JSON the notification sent."""
    from lsprotocol import types
    from compactd.rpc.server import CompactdServer

    class Writer:
        def __init__(self) -> None:
            self.frames: list[bytes] = []

        def write(self, data: bytes) -> None:
            self.frames.append(data)

    def bodies(writer: Writer) -> list[tuple[bytes, object]]:
        out = []
        for data in writer.frames:
            header, _, body = data.partition(b"\r\n\r\n")
            assert header.split(b"\r\n")[0] == b"Content-Length: %d" % len(body)
            out.append((body, json.loads(body)))
        return out

    writer = Writer()
    protocol = CompactdServer().protocol
    protocol.set_writer(writer)
    params = {"sessionId": "s", "kind": "appended", "entryIds": ["e1"], "nodes": [{"preview": "été"}]}
    protocol.notify("session/didChange", params)
    protocol.notify("session/didChange", {"sessionId": "s", "preview": "\ud800"})
    protocol.notify("window/logMessage", types.LogMessageParams(type=types.MessageType.Info, message="hi"))
    (fast, first), (_, second), (_, third) = bodies(writer)
    assert first == {"jsonrpc": "2.0", "method": "session/didChange", "params": params} and "été".encode() in fast
    assert second == {"jsonrpc": "2.0", "method": "session/didChange", "params": {"sessionId": "s", "preview": "\ud800"}}
    assert third == {"jsonrpc": "2.0", "method": "window/logMessage", "params": {"type": 3, "message": "hi"}}


def test_a_session_the_daemon_opens_has_its_labels_resolved_in_the_worker(tmp_path: Path) -> None:
    """The open's worker resolves the labels, so no later request resolves them on the loop."""
    from compactd.rpc.handlers import _open_with_labels
    from compactd.session.tree import resolve_labels

    path = tmp_path / "s.jsonl"
    lines = [{"type": "session", "version": 3, "id": "s", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/"},
             {"type": "message", "id": "a", "parentId": None, "timestamp": "2025-01-01T00:00:01.000Z",
              "message": {"role": "user", "content": "hi", "timestamp": 1}},
             {"type": "label", "id": "b", "parentId": "a", "timestamp": "2025-01-01T00:00:02.000Z",
              "targetId": "a", "label": "start"}]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    session = _open_with_labels(path, None)
    assert session._labels == resolve_labels(session.entries) == {"a": "start"}
