"""Requests of one session are handled in arrival order (issue 26 §2), on a real `compactd serve`:
requests pipelined right behind `session/open` in the same write, as LSP clients send them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.e2e.helpers import write_session
from tests.e2e.raw import RawServer


def frame(msg_id: Any, method: str, params: dict[str, Any]) -> bytes:
    body = json.dumps({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params}).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def test_requests_pipelined_behind_open_see_the_session(tmp_path: Path) -> None:
    server = RawServer()
    try:
        server.initialize()
        rounds = 12
        for n in range(rounds):
            sid = f"pipelined-{n}"
            path = tmp_path / f"{sid}.jsonl"
            ids = write_session(path, tmp_path, turns=40, session_id=sid)
            message = {"role": "user", "content": [{"type": "text", "text": f"next {n}"}], "timestamp": 1}
            server.write(frame(f"open{n}", "session/open", {"path": str(path)})
                         + frame(f"entry{n}", "session/entry", {"sessionId": sid, "entryId": ids[0]})
                         + frame(f"append{n}", "session/append",
                                 {"sessionId": sid, "entries": [{"type": "message", "message": message}]})
                         + frame(f"context{n}", "session/context", {"sessionId": sid})
                         + frame(f"close{n}", "session/close", {"sessionId": sid}))
            answers = {}
            while len(answers) < 5:
                message_in = server.receive()
                if "id" in message_in and "method" not in message_in:
                    answers[message_in["id"]] = message_in
            errors = {k: v["error"] for k, v in answers.items() if "error" in v}
            assert errors == {}, errors
            assert answers[f"entry{n}"]["result"]["entry"]["id"] == ids[0]
            appended = answers[f"append{n}"]["result"]["entryIds"][0]
            assert answers[f"context{n}"]["result"]["leafId"] == appended  # the append came first
            assert answers[f"close{n}"]["result"]["closed"] is True
        unknown = server.request("late", "session/entry", {"sessionId": "never-opened", "entryId": "x"})
        assert unknown["error"]["code"] == -32010  # no open in flight: refused at once
        assert server.shutdown() == 0
    finally:
        server.kill()


def test_turns_start_in_order_and_a_cancelled_waiter_does_not_block() -> None:
    import asyncio

    from compactd.rpc.order import SessionOrder

    async def run() -> list[str]:
        order = SessionOrder()
        started: list[str] = []
        release = asyncio.Event()

        async def request(name: str, hold: bool = False, hand_over: bool = False) -> None:
            turn = await order.enter("s")
            try:
                started.append(name)
                if hand_over:
                    order.leave_current()  # what off_loop and run_job do
                if hold or hand_over:
                    await release.wait()
            finally:
                order.leave(turn)

        first = asyncio.create_task(request("first", hand_over=True))
        second = asyncio.create_task(request("second", hold=True))
        doomed = asyncio.create_task(request("doomed"))
        last = asyncio.create_task(request("last"))
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        assert started == ["first", "second"]  # first handed over; second holds the turn
        doomed.cancel()
        release.set()
        await asyncio.gather(first, second, last, return_exceptions=True)
        assert doomed.cancelled() and order.waiting == 0
        return started

    assert asyncio.run(run()) == ["first", "second", "last"]
