"""How editors launch the daemon: vscode-languageclient appends `--stdio` and
`--clientProcessId=<its pid>` to the server command; other clients write `--clientProcessId N`."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest
import pytest_lsp
from pytest_lsp import ClientServerConfig

from .helpers import TestClient, initialize, make_client, server_env
from .raw import RawServer

LAUNCH = [sys.executable, "-m", "compactd", "serve", "--stdio", f"--clientProcessId={os.getpid()}"]


@pytest_lsp.fixture(config=ClientServerConfig(server_command=LAUNCH, client_factory=make_client,
                                              server_env=server_env()))
async def editor_client(lsp_client: TestClient):
    yield
    await lsp_client.shutdown_session()


async def test_language_client_command_line_completes_initialize(editor_client: TestClient) -> None:
    result = await initialize(editor_client)
    assert result.server_info is not None and result.server_info.name == "compactd"
    assert "session/open" in result.capabilities.experimental["compactd"]["methods"]


def _wait_exit(proc: subprocess.Popen[bytes], seconds: float) -> int | None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return proc.returncode
        time.sleep(0.05)
    return None


@pytest.mark.parametrize("form", ["equals", "separate"])
def test_daemon_exits_when_the_client_process_is_gone(form: str) -> None:
    editor = subprocess.Popen(["sleep", "300"])
    pid_args = [f"--clientProcessId={editor.pid}"] if form == "equals" else ["--clientProcessId", str(editor.pid)]
    server = RawServer([sys.executable, "-m", "compactd", "serve", "--stdio", *pid_args])
    try:
        server.initialize()
        # Alive while the client lives (stdin stays open the whole time: only the pid ends it).
        assert _wait_exit(server.proc, 1.5) is None
        editor.kill()
        editor.wait()
        code = _wait_exit(server.proc, 20)
        assert code == 1, f"daemon still running or wrong status {code}; stderr:\n{server.stderr}"
        assert f"client process {editor.pid} is gone" in server.stderr
    finally:
        editor.kill()
        server.kill()


@pytest.mark.parametrize("args,message", [
    (["--bogus"], "unrecognized arguments: --bogus"),
    (["--clientProcessId=abc"], "not a process id: 'abc'"),
    (["--clientProcessId"], "expected one argument"),
])
def test_unknown_or_bad_arguments_are_a_usage_error(args: list[str], message: str) -> None:
    out = subprocess.run([sys.executable, "-m", "compactd", "serve", *args], capture_output=True, text=True,
                         stdin=subprocess.DEVNULL, env=server_env(), timeout=60)
    assert out.returncode == 2
    assert "usage: compactd" in out.stderr and message in out.stderr
