"""Helpers for the end-to-end tests: session files, the test client, JSON-RPC calls."""

from __future__ import annotations

import asyncio
import inspect
import json
import os
import sys
import tempfile
from collections.abc import Callable
from datetime import UTC
from pathlib import Path
from typing import Any

from compactd.rpc.protocol import make_converter
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pytest_lsp import LanguageClient
from pytest_lsp.client import DEFAULT_CLIENT_FEATURES

SECRET = "sk-test-DO-NOT-LEAK-0123456789abcdef"
KEY_ENV = "COMPACTD_E2E_API_KEY"
AGENT_DIR = tempfile.mkdtemp(prefix="compactd-e2e-agent-")
SERVER_COMMAND = [sys.executable, "-m", "compactd", "serve"]


def server_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "COMPACTD_MODEL", "COMPACTD_SUMMARIZER")}
    env.update({"PI_CODING_AGENT_DIR": AGENT_DIR, KEY_ENV: SECRET, "PYTHONUNBUFFERED": "1"})
    env.update(extra)
    return env


# --- session files -------------------------------------------------------------------------------

USAGE = {"input": 1000, "output": 200, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 1200,
         "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}}


def user_message(text: str, ts: int) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": ts}


def assistant_message(text: str, ts: int, tool_calls: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    content: list[dict[str, Any]] = [{"type": "text", "text": text}]
    content += tool_calls or []
    return {"role": "assistant", "content": content, "api": "openai-completions", "provider": "openai",
            "model": "gpt-4o", "usage": dict(USAGE), "stopReason": "toolUse" if tool_calls else "stop",
            "timestamp": ts}


def tool_result(call_id: str, name: str, text: str, ts: int) -> dict[str, Any]:
    return {"role": "toolResult", "toolCallId": call_id, "toolName": name,
            "content": [{"type": "text", "text": text}], "isError": False, "timestamp": ts}


def _iso(ms: int) -> str:
    from datetime import datetime

    return datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def write_session(path: Path, cwd: Path, turns: int = 6, text_chars: int = 1600, tool_output_chars: int = 0,
                  session_id: str = "e2e-session") -> list[str]:
    """A v3 session with `turns` user/assistant turns (optionally one tool call each).
    Returns the entry ids in file order."""
    base = 1_760_000_000_000
    lines = [{"type": "session", "version": 3, "id": session_id, "timestamp": _iso(base), "cwd": str(cwd)}]
    ids: list[str] = []
    parent: str | None = None
    n = 0

    def add(message: dict[str, Any]) -> None:
        nonlocal parent, n
        n += 1
        entry_id = f"e{n:04d}"
        lines.append({"type": "message", "id": entry_id, "parentId": parent, "timestamp": _iso(message["timestamp"]),
                      "message": message})
        ids.append(entry_id)
        parent = entry_id

    filler = "lorem ipsum dolor sit amet " * (text_chars // 27 + 1)
    for t in range(turns):
        ts = base + t * 10_000
        add(user_message(f"Turn {t}: please work on src/module_{t}.py. {filler[:text_chars]}", ts + 1))
        if tool_output_chars:
            call = {"type": "toolCall", "id": f"call{t}", "name": "bash",
                    "arguments": {"command": f"cat src/module_{t}.py"}}
            add(assistant_message(f"Looking at module {t}.", ts + 2, [call]))
            add(tool_result(f"call{t}", "bash", ("output line\n" * (tool_output_chars // 12 + 1))[:tool_output_chars],
                            ts + 3))
        add(assistant_message(f"Done with turn {t}. {filler[:text_chars]}", ts + 4))
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return ids


# --- client --------------------------------------------------------------------------------------


class HookFailure(JsonRpcException):
    """Raised by a test's hook handler: the client answers the server with this error."""

    CODE = -32603


class TestClient(LanguageClient):
    """pytest-lsp's client with raw-JSON params/results, recorded notifications and raw progress."""

    __test__ = False

    def __init__(self) -> None:
        super().__init__(converter_factory=make_converter)
        self.notifications: list[tuple[str, Any]] = []
        self.progress: dict[Any, list[dict[str, Any]]] = {}
        self.created_tokens: list[Any] = []
        self.hook_calls: list[tuple[str, Any]] = []
        # hook method -> answer, or a callable(params) returning the answer (may be async)
        self.hook_answers: dict[str, Any] = {}
        self.changed = asyncio.Event()

    def report_server_error(self, error: Exception, source: Any) -> None:
        if isinstance(error, HookFailure):
            return  # an error answer the test asked for, not a client failure
        super().report_server_error(error, source)

    def of(self, method: str) -> list[Any]:
        return [params for name, params in self.notifications if name == method]

    async def wait_for(self, predicate: Callable[[], Any], timeout: float = 30.0) -> Any:
        async def loop() -> Any:
            while True:
                value = predicate()
                if value:
                    return value
                self.changed.clear()
                try:
                    await asyncio.wait_for(self.changed.wait(), 0.2)
                except TimeoutError:
                    pass

        return await asyncio.wait_for(loop(), timeout)


def make_client() -> TestClient:
    client = TestClient()
    for method, func in DEFAULT_CLIENT_FEATURES.items():
        if method not in (types.PROGRESS, types.WINDOW_WORK_DONE_PROGRESS_CREATE):
            client.feature(method)(func)

    @client.feature(types.WINDOW_WORK_DONE_PROGRESS_CREATE)
    def create(ls: TestClient, params: types.WorkDoneProgressCreateParams) -> None:
        ls.created_tokens.append(params.token)
        ls.progress.setdefault(params.token, [])

    @client.feature(types.PROGRESS)
    def progress(ls: TestClient, params: types.ProgressParams) -> None:
        ls.progress.setdefault(params.token, []).append(params.value)
        ls.changed.set()

    for name in ("session/didChange", "session/compactionStart", "session/compactionEnd"):
        def record(ls: TestClient, params: Any, _name: str = name) -> None:
            ls.notifications.append((_name, params))
            ls.changed.set()

        client.feature(name)(record)

    for name in ("session/beforeCompact", "session/compacting", "session/beforeTree"):
        async def hook(ls: TestClient, params: Any, _name: str = name) -> Any:
            ls.hook_calls.append((_name, params))
            ls.changed.set()
            answer = ls.hook_answers.get(_name)
            if callable(answer):
                answer = answer(params)
                if inspect.isawaitable(answer):
                    answer = await answer
            return answer

        client.feature(name)(hook)
    return client


async def initialize(client: TestClient, *, settings: dict[str, Any] | None = None,
                     summarizer: dict[str, Any] | None = None, hooks: list[str] | None = None,
                     hook_timeout_ms: int | None = None, progress: bool = True,
                     extra: dict[str, Any] | None = None) -> types.InitializeResult:
    options: dict[str, Any] = {"settings": settings if settings is not None else default_settings()}
    if summarizer is not None:
        options["summarizer"] = summarizer
    if hooks is not None:
        options["hooks"] = hooks
    if hook_timeout_ms is not None:
        options["hookTimeoutMs"] = hook_timeout_ms
    options.update(extra or {})
    caps = types.ClientCapabilities(window=types.WindowClientCapabilities(work_done_progress=progress))
    return await client.initialize_session(types.InitializeParams(capabilities=caps, initialization_options=options))


def default_settings() -> dict[str, Any]:
    # No retries (failures surface at once); small keep budget so short sessions can compact.
    return {"compaction": {"keepRecentTokens": 800}, "retry": {"enabled": False}}


def fake_summarizer(url: str, model: str = "gpt-4o-mini") -> dict[str, Any]:
    return {"backend": "openai", "baseUrl": url, "model": model, "apiKeyEnv": KEY_ENV}


async def call(client: TestClient, method: str, params: Any = None, msg_id: Any = None) -> Any:
    return await client.protocol.send_request_async(method, params, msg_id=msg_id)


async def call_error(client: TestClient, method: str, params: Any = None) -> JsonRpcException:
    try:
        result = await call(client, method, params)
    except JsonRpcException as exc:
        return exc
    raise AssertionError(f"{method} succeeded unexpectedly: {str(result)[:300]}")


GOOD_SUMMARY = [
    "## Goal\nRefactor the modules.\n\n",
    "## Constraints & Preferences\n- Keep the API.\n\n",
    "## Progress\n### Done\n- [x] Turns 0-2\n\n### In Progress\n- [ ] Turn 3\n\n### Blocked\n- (none)\n\n",
    "## Key Decisions\n- **Split modules**: clarity.\n\n",
    "## Next Steps\n1. Continue.\n\n",
    "## Critical Context\n- (none)\n",
]
