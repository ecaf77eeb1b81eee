"""`session/tree`'s every node as LSP partial results (`partialResultToken`).

The whole tree of a 100k-entry session is tens of MB of JSON. Sent as one response, every other
answer queued behind its write and the client's reading of it (~0.6 s, issue 29). Streamed, the
nodes go out as `$/progress` notifications of at most `CHUNK_NODES` nodes each, one per turn of
the event loop, so other answers are written between them; the response carries the fields
beside `nodes` and the last chunk's nodes. Both the chunks and the response are encoded in the
worker that built the tree (`encode_streamed`): the loop only writes bytes.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from .answers import EncodedAnswer, json_bytes

__all__ = ["CHUNK_NODES", "StreamedTree", "encode_streamed", "send_frames"]

# Nodes per `$/progress` chunk: ~0.3 MB of JSON (a node is ~300 bytes, its preview at most 120
# characters), a millisecond or two of the client's decoding before the next answer can be read.
CHUNK_NODES = 1000


@dataclass(frozen=True, slots=True)
class StreamedTree:
    """A tree answer cut for streaming: whole `$/progress` frames in order, then the response."""

    frames: Sequence[bytes]
    answer: EncodedAnswer


def encode_streamed(report: dict[str, Any], token: int | str, chunk_nodes: int = CHUNK_NODES) -> StreamedTree:
    """`report` (`{leafId, nodes, ...}`) as progress frames for `token`, each `{"nodes": [...]}`
    of at most `chunk_nodes` nodes in tree order, and the response: every other field of the
    report with the last chunk as its `nodes` (all of them when they fit one chunk). Takes the
    report's nodes: each chunk is freed once encoded, from the end (100k nodes freed in one go
    held every other thread ~0.1 s)."""
    nodes: list[dict[str, Any]] = report.pop("nodes")
    cuts = list(range(0, len(nodes), chunk_nodes)) or [0]
    answer = EncodedAnswer.whole(json_bytes({**report, "nodes": nodes[cuts[-1]:]}))
    del nodes[cuts[-1]:]
    head = b'{"jsonrpc":"2.0","method":"$/progress","params":{"token":%s,"value":{"nodes":' % json_bytes(token)
    frames: list[bytes] = []
    for start in reversed(cuts[:-1]):
        body = head + json_bytes(nodes[start:]) + b"}}}"
        del nodes[start:]
        frames.append(b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
    frames.reverse()
    return StreamedTree(frames, answer)


class FrameWriter(Protocol):
    def write(self, data: bytes) -> None: ...


async def send_frames(writer: FrameWriter, frames: Sequence[bytes]) -> None:
    """Write `frames`, one per turn of the loop: the requests that came in meanwhile are handled
    and answered between two chunks. Cancelling the request stops the chunks still to go."""
    for frame in frames:
        writer.write(frame)
        await asyncio.sleep(0)
