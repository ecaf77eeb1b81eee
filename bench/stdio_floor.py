"""The least any stdio daemon can take to give a client a given answer (benchmarks only).

    python -m bench.stdio_floor ANSWER_FILE...

Each file holds one JSON-RPC response body the real daemon sent. This process answers request
`floor/answer` with params `{"index": i}` by sending answer i's result again, under the request's
id, already encoded: no session, no work, no event loop, blocking reads and writes on a pipe
widened as the daemon widens its own. What a request then costs the client — two pipe wake-ups,
writing and reading the bytes, decoding them — is what every daemon speaking JSON over stdio pays
on top of its work, whatever it is written in. `shutdown` is answered with null, `exit` ends it.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import orjson

from compactd.rpc.protocol import widen_output
from compactd.session.file import write_all_parts

from bench.lsp import frame_span

READ_BYTES = 1 << 20


def load_results(paths: list[Path]) -> list[bytes]:
    """Each response body's `result`, encoded again as the daemon encodes its answers (orjson)."""
    return [orjson.dumps(orjson.loads(path.read_bytes())["result"]) for path in paths]


def frame(msg_id: object, result: bytes) -> list[bytes]:
    head = b'{"jsonrpc":"2.0","id":%s,"result":' % orjson.dumps(msg_id)
    return [b"Content-Length: %d\r\n\r\n" % (len(head) + len(result) + 1) + head, result, b"}"]


def serve(results: list[bytes], fd_in: int = 0, fd_out: int = 1) -> None:
    widen_output(fd_out)
    buffer = bytearray()
    while chunk := os.read(fd_in, READ_BYTES):
        buffer += chunk
        while (span := frame_span(buffer)) is not None:
            message = orjson.loads(memoryview(buffer)[span[0]:span[1]])
            del buffer[:span[1]]
            method = message.get("method")
            if method == "exit":
                return
            if "id" not in message:
                continue
            result = results[message["params"]["index"]] if method == "floor/answer" else b"null"
            write_all_parts(fd_out, frame(message["id"], result))


def main(argv: list[str]) -> int:
    serve(load_results([Path(arg) for arg in argv]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
