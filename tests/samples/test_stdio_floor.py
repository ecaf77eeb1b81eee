"""bench/stdio_floor.py gives the benchmark's client the real daemon's answers again, under each
request's own id, with no work of its own (the "stdio floor" of the side-by-side table)."""

from __future__ import annotations

import gc
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from bench.lsp import Daemon

from ..conftest import PI_FIXTURE, REPO_ROOT


@pytest.fixture
def thawed_afterwards() -> Iterator[None]:
    """The benchmark's client freezes this process's heap when it starts a server (so its own
    collector passes are not timed as the server's); later tests must find nothing frozen."""
    yield
    gc.unfreeze()


def test_the_floor_replays_the_daemons_answers(tmp_path: Path, thawed_afterwards: None) -> None:
    session = tmp_path / "session.jsonl"
    shutil.copyfile(PI_FIXTURE, session)
    (tmp_path / "agent").mkdir()
    with Daemon(env={"PI_CODING_AGENT_DIR": str(tmp_path / "agent")}, cwd=tmp_path) as daemon:
        daemon.initialize({"settings": {"compaction": {"enabled": False}}})
        opened = daemon.call_body("session/open", {"path": str(session)})
        sid = orjson.loads(opened)["result"]["sessionId"]
        bodies = [opened,
                  daemon.call_body("session/context", {"sessionId": sid}),
                  daemon.call_body("session/prepareCompaction", {"sessionId": sid})]
    files = []
    for number, body in enumerate(bodies):
        files.append(tmp_path / f"answer-{number}.json")
        files[-1].write_bytes(body)
    expected = [orjson.loads(body)["result"] for body in bodies]
    assert expected[2]["conversationText"]  # a real dry run, text included

    with Daemon(command=[sys.executable, "-m", "bench.stdio_floor", *map(str, files)], cwd=REPO_ROOT) as floor:
        # Asked out of order and twice: each request gets the answer it names, under its own id.
        for index in (2, 0, 1, 2):
            msg_id = floor.start("floor/answer", {"index": index})
            response = floor.wait(msg_id)
            assert response["id"] == msg_id
            assert response["result"] == expected[index]
        assert floor.call("shutdown") is None
    assert floor.proc.returncode == 0  # `exit` ended it
