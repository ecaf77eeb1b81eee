"""Session files the tree scenarios open beside the ones the real Pi 1.6.0 and oh-my-pi 18.2.3 wrote
(tests/fixtures/real-programs, made by make_real_sessions.py): generated here in the shapes of the
spec addendum (/work/shared/spec/pi-behavior-1.6-and-omp18.md, §3-§9) for what the real programs do
not write in make_real_sessions.py's scenarios — a deeply branched 20k-entry session; a Pi 1.6 `usage`
entry (written by its cache warmer, on a timer after a turn, for a model that declares a prompt-cache
lifetime and prices; not driven there); an oh-my-pi handoff compaction whose dead-end guard recorded a
warning (automatic maintenance that fails to free context), a null thinking level and a thinking-only
answer, `model_usage` of a title model."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

T0 = 1_796_000_000_000  # ms
USAGE = {"input": 900, "output": 40, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 940,
         "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}}
LEAF_TEXT = "Done: the upload retry now backs off and passed 200 runs"
DEEP_NAME = "Flaky upload retry investigation"
OMP_HANDOFF_TITLE = "Handoff that freed too little"


def iso(ms: int) -> str:
    from datetime import UTC, datetime
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"


def header(session_id: str, cwd: Path, ms: int = T0) -> dict[str, Any]:
    return {"type": "session", "version": 3, "id": session_id, "timestamp": iso(ms), "cwd": str(cwd)}


def user(eid: str, parent: str | None, ms: int, text: str) -> dict[str, Any]:
    return {"type": "message", "id": eid, "parentId": parent, "timestamp": iso(ms),
            "message": {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": ms}}


def assistant(eid: str, parent: str | None, ms: int, content: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {"type": "message", "id": eid, "parentId": parent, "timestamp": iso(ms),
            "message": {"role": "assistant", "content": content, "api": "openai-completions", "provider": "openai",
                        "model": "gpt-4o", "usage": USAGE, "stopReason": "stop", "timestamp": ms, **extra}}


def text(t: str) -> list[dict[str, Any]]:
    return [{"type": "text", "text": t}]


def write(path: Path, entries: list[dict[str, Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(e, separators=(",", ":")) + "\n" for e in entries))
    return path


def deep_branched(path: Path, cwd: Path, *, path_entries: int = 12_000, branches: int = 25,
                  side_entries: int = 320, nested: int = 16) -> Path:
    """About 20k entries: a path of `path_entries` with `branches` branch points on it (each leaving
    a side branch of `side_entries`, which has `nested` branch points of its own), so 25 branch
    points lie on the path to the leaf and ~425 in all."""
    counter = iter(range(1, 10**9))
    ms = T0

    def nid() -> str:
        return f"{next(counter):08x}"

    def turn(parent: str | None, i: int, where: str) -> Iterator[dict[str, Any]]:
        nonlocal ms
        ms += 1000
        u = user(nid(), parent, ms, f"{where} turn {i}: check the upload retry in src/upload/retry.py")
        yield u
        ms += 1000
        yield assistant(nid(), u["id"], ms, text(f"{where} turn {i}: the retry waits {i % 7} s; the test still fails"))

    entries: list[dict[str, Any]] = [header("0199a0b0-deep-branched", cwd)]
    name = {"type": "session_info", "id": nid(), "parentId": None, "timestamp": iso(ms), "name": DEEP_NAME}
    entries.append(name)
    parent = name["id"]
    every = path_entries // (branches + 1)
    made = 1
    attempt = 0
    while made < path_entries - 2:
        for e in turn(parent, made, "main"):
            entries.append(e)
            parent = e["id"]
        made += 2
        if made // every > attempt and attempt < branches:
            attempt += 1
            # A side branch left behind at this point (an earlier attempt), with branches of its own.
            side_parent = parent
            side_every = max(2, side_entries // (nested + 1))
            for j in range(0, side_entries, 2):
                for e in turn(side_parent, j, f"attempt {attempt}"):
                    entries.append(e)
                    side_parent = e["id"]
                if j // side_every < nested and (j + 2) // side_every > j // side_every:
                    for e in turn(side_parent, j, f"attempt {attempt} detour"):
                        entries.append(e)
    ms += 1000
    entries.append(user(nid(), parent, ms, "is it fixed now?"))
    ms += 1000
    entries.append(assistant(nid(), entries[-1]["id"], ms, text(LEAF_TEXT)))
    return write(path, entries)


def pi16(path: Path, cwd: Path) -> Path:
    """Pi 1.6: a system message with prompt sections, an answer with thinking, a context edit that
    omits a user message and one that replaces an answer, a usage entry (cache warming)."""
    ms = T0 + 10_000_000
    e: list[dict[str, Any]] = [header("0199b1c2-pi16-session", cwd, ms)]
    e.append({"type": "model_change", "id": "a1000001", "parentId": None, "timestamp": iso(ms),
              "provider": "openai", "modelId": "gpt-4o"})
    e.append({"type": "thinking_level_change", "id": "a1000002", "parentId": "a1000001", "timestamp": iso(ms + 1),
              "thinkingLevel": "off"})
    e.append({"type": "message", "id": "a1000003", "parentId": "a1000002", "timestamp": iso(ms + 2),
              "message": {"role": "system", "content": "", "sections": {"preamble": "You are a coding assistant…",
                                                                        "cwd": f"<cwd>\n{cwd}\n</cwd>"},
                          "toolsAdded": [{"name": "read", "description": "Read a file", "parameters": {}}],
                          "timestamp": ms + 2}})
    e.append(user("a1000004", "a1000003", ms + 3, "paste the whole 4 MB log here please"))
    e.append(assistant("a1000005", "a1000004", ms + 4,
                       [{"type": "thinking", "thinking": "The log is huge; summarise it instead."},
                        {"type": "text", "text": "Here is the log: …(4 MB)…"}], thinkingLevel="off", durationMs=23))
    e.append({"type": "context_edit", "id": "a1000006", "parentId": "a1000005", "timestamp": iso(ms + 5),
              "targetId": "a1000004", "replacement": None})
    e.append({"type": "context_edit", "id": "a1000007", "parentId": "a1000006", "timestamp": iso(ms + 6),
              "targetId": "a1000005", "replacement": {"content": [{"type": "text", "text": "(log omitted)"}]}})
    e.append({"type": "usage", "id": "a1000008", "parentId": "a1000007", "timestamp": iso(ms + 7),
              "kind": "cache_warm", "provider": "openai", "model": "gpt-4o", "usage": USAGE})
    e.append(user("a1000009", "a1000008", ms + 8, "now fix the parser"))
    e.append(assistant("a100000a", "a1000009", ms + 9, text("Fixed the parser; tests pass.")))
    return write(path, e)


def oh_my_pi(path: Path, cwd: Path) -> Path:
    """oh-my-pi 18: the title slot line, a null thinking level, a thinking-only answer, a tool
    start record, a handoff compaction whose context grew (recorded tokensAfter and warning),
    model_usage and title_change entries."""
    ms = T0 + 20_000_000
    e: list[dict[str, Any]] = [
        {"type": "title", "v": 1, "title": OMP_HANDOFF_TITLE, "updatedAt": iso(ms), "pad": " " * 64},
        header("0199c2d3-omp-session", cwd, ms),
        {"type": "model_change", "id": "b2000001", "parentId": None, "timestamp": iso(ms), "model": "openai/gpt-4o",
         "resolvedModelIsFallback": False},
        {"type": "thinking_level_change", "id": "b2000002", "parentId": "b2000001", "timestamp": iso(ms + 1),
         "thinkingLevel": None, "configured": "auto"},
        user("b2000003", "b2000002", ms + 2, "read notes.md and refactor the loader"),
        assistant("b2000004", "b2000003", ms + 3, [{"type": "thinking", "thinking": "", "thinkingSignature": "sig"}]),
        assistant("b2000005", "b2000004", ms + 4,
                  [{"type": "toolCall", "id": "call_1", "name": "read", "arguments": {"path": "notes.md"}}]),
        {"type": "custom", "id": "b2000006", "parentId": "b2000005", "timestamp": iso(ms + 5),
         "customType": "tool_execution_start",
         "data": {"toolCallId": "call_1", "toolName": "read", "startedAt": ms + 5, "args": {"path": "notes.md"}}},
        {"type": "message", "id": "b2000007", "parentId": "b2000006", "timestamp": iso(ms + 6),
         "message": {"role": "toolResult", "toolCallId": "call_1", "toolName": "read",
                     "content": text("# Notes\nloader: 3 functions"), "isError": False, "timestamp": ms + 6}},
        {"type": "compaction", "id": "b2000008", "parentId": "b2000007", "timestamp": iso(ms + 7),
         "summary": "Done. (saw 6 msgs, 0 tool results)\n\n<files>\nnotes.md (Read)\n</files>",
         "firstKeptEntryId": "b2000007", "tokensBefore": 4477, "tokensAfter": 14722, "method": "handoff",
         "details": {"readFiles": ["notes.md"], "modifiedFiles": []}, "fromExtension": False,
         "warning": "Compaction freed too little context to make progress — pausing automatic maintenance"},
        {"type": "model_usage", "id": "b2000009", "parentId": "b2000008", "timestamp": iso(ms + 8),
         "purpose": "title", "api": "openai-completions", "provider": "openai", "model": "gpt-4o-mini",
         "usage": USAGE, "stopReason": "stop"},
        {"type": "title_change", "id": "b200000a", "parentId": "b2000009", "timestamp": iso(ms + 9),
         "title": OMP_HANDOFF_TITLE, "source": "auto"},
        user("b200000b", "b200000a", ms + 10, "go on with the refactor"),
        assistant("b200000c", "b200000b", ms + 11, text("Refactored the loader into one function.")),
    ]
    return write(path, e)
