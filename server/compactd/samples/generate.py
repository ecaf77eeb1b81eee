"""Deterministic generator of realistic Pi v3 session files (JSONL).

The generator simulates a coding-agent session as a tree: user turns, assistant steps with tool
calls and results, user `!` commands, model/thinking changes, custom entries, labels, navigation
back to an earlier entry with a branch summary (fromId = abandoned leaf, decision D-5) and
compactions whose `firstKeptEntryId` is a user or assistant message on the current path. All
randomness comes from one `random.Random(seed)` and the clock starts at a fixed instant, so the
same arguments give byte-identical output. Lines are compact JSON per E-1 and yielded without
the trailing newline.
"""

from __future__ import annotations

import base64
import json
import math
import random
import struct
import uuid
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from compactd.samples import texts, tools
from compactd.samples.project import Project
from compactd.samples.texts import Task

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_START = datetime(2025, 3, 3, 8, 30, tzinfo=UTC)
DEFAULT_TURNS = 20

# provider, model, api, $/Mtok (input, output, cacheRead, cacheWrite)
MODELS: tuple[tuple[str, str, str, tuple[float, float, float, float]], ...] = (
    ("anthropic", "claude-sonnet-4-5", "anthropic-messages", (3.0, 15.0, 0.3, 3.75)),
    ("openai", "gpt-5.1-codex", "openai-responses", (1.25, 10.0, 0.125, 0.0)),
    ("google", "gemini-2.5-pro", "google-generative-ai", (1.25, 10.0, 0.31, 0.0)),
)
THINKING_LEVELS = ("off", "minimal", "low", "medium", "high")
RESERVE_TOKENS = 16384
CONTEXT_WINDOWS = (32_768, 65_536, 131_072, 200_000)
_B62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


def iso_ms(ms: int) -> str:
    """E-2 entry timestamp: ISO-8601 UTC with milliseconds and `Z`."""
    d = _EPOCH + timedelta(milliseconds=ms)
    return f"{d:%Y-%m-%dT%H:%M:%S}.{ms % 1000:03d}Z"


def dumps(obj: Any) -> str:
    """E-1 compact JSON, non-ASCII written literally."""
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def _est(chars: int) -> int:
    return math.ceil(chars / 4)


def _tiny_png(rng: random.Random, w: int = 24, h: int = 12) -> str:
    """A real (tiny) PNG screenshot stand-in, base64."""
    color = bytes(rng.randrange(256) for _ in range(3))
    raw = b"".join(b"\x00" + color * w for _ in range(h))

    def chunk(tag: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data))

    png = (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
           + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))
    return base64.b64encode(png).decode()


@dataclass(frozen=True)
class _Knobs:
    """Internal tuning; the public API exposes only the documented switches."""

    branch_turns: frozenset[int] | None = None  # force navigation before these turns (and only these)
    branch_prob: float = 0.1
    long_turn_prob: float = 0.15
    extras_scale: float = 1.0
    result_cap: int | None = None  # upper bound on one tool output (keeps small samples small)


class _Node:
    """What the simulator remembers of an entry on the current path (not the entry itself)."""

    __slots__ = ("details", "est", "first_kept", "id", "kind", "ops", "stop", "task", "total")

    def __init__(self, id: str, kind: str, est: int = 0) -> None:
        self.id = id
        self.kind = kind  # user assistant toolResult bash custom_message branch_summary compaction meta
        self.est = est  # chars/4 estimate of what the entry contributes to the LLM context
        self.ops: tuple[tuple[str, str], ...] = ()  # (tool, path) of read/edit/write calls
        self.task = -1
        self.stop: str | None = None
        self.total = 0  # usage.totalTokens when this is an assistant message with valid usage
        self.first_kept: str | None = None
        self.details: tuple[list[str], list[str]] | None = None


class _Sim:
    def __init__(self, *, seed: int, target_bytes: int | None, turns: int | None, branches: bool,
                 compactions: bool, split_turns: bool, cwd: str, session_id: str | None, knobs: _Knobs) -> None:
        self.rng = random.Random(seed)
        rng = self.rng
        self.target = target_bytes
        self.max_turns = turns if turns is not None else (None if target_bytes is not None else DEFAULT_TURNS)
        self.branches = branches
        self.compactions = compactions
        self.split_turns = split_turns
        self.cwd = cwd.rstrip("/") or "/"
        self.k = knobs
        self.now = int((_START - _EPOCH).total_seconds() * 1000) + (seed % 90) * 86_400_000
        self.start_ms = self.now
        self.session_id = session_id or self._uuid7()
        self.project = Project(rng)
        self.model = MODELS[rng.randrange(len(MODELS))]
        self.thinking = rng.choice(THINKING_LEVELS[1:])
        self.window = rng.choice(CONTEXT_WINDOWS)
        self.threshold = self.window - RESERVE_TOKENS
        self.ratio = rng.uniform(1.05, 1.35)  # real tokens per chars/4 estimate
        self.sys_tokens = rng.randint(2500, 9000)  # system prompt + tool definitions
        self.keep = max(1500, min(20000, int(self.threshold / self.ratio * rng.uniform(0.15, 0.35))))
        self.ids: set[str] = set()
        self.path: list[_Node] = []
        self.pos: dict[str, int] = {}
        self.ctx = 0  # context estimate (chars/4) of the current path, compaction-aware
        self.trailing = 0  # estimate added since the last assistant with valid usage
        self.last_total = 0
        self.cached = 0  # prompt prefix the provider can serve from cache
        self.comp_idx: int | None = None
        self.tasks: list[Task] = []
        self.user_turns = 0
        self.bytes = 0
        self.out: list[str] = []
        self.tool_seq = 0
        self.picker = texts.RequestPicker(rng)

    # ------------------------------------------------------------------------------ primitives

    def _uuid7(self) -> str:
        r = self.rng.getrandbits(74)
        v = (self.now << 80) | (0x7 << 76) | ((r >> 62) << 64) | (0b10 << 62) | (r & ((1 << 62) - 1))
        return str(uuid.UUID(int=v))

    def _new_id(self) -> str:
        for _ in range(100):
            i = f"{self.rng.getrandbits(32):08x}"
            if i not in self.ids:
                self.ids.add(i)
                return i
        i = self._uuid7()  # F-7 fallback after 100 collisions
        self.ids.add(i)
        return i

    def _tick(self, lo: int, hi: int) -> int:
        self.now += self.rng.randint(lo, hi)
        return self.now

    def _remaining(self) -> int | None:
        return None if self.target is None else self.target - self.bytes

    def _cap(self) -> int | None:
        rem = self._remaining()
        caps = [c for c in (self.k.result_cap, None if rem is None else max(1500, rem // 2)) if c is not None]
        return min(caps) if caps else None

    def _base(self, type_: str) -> dict[str, Any]:
        self._tick(1, 40)
        return {"type": type_, "id": self._new_id(), "parentId": self.path[-1].id if self.path else None,
                "timestamp": iso_ms(self.now)}

    def _emit(self, entry: dict[str, Any], node: _Node) -> None:
        line = dumps(entry)
        self.out.append(line)
        self.bytes += len(line.encode()) + 1
        self.pos[node.id] = len(self.path)
        self.path.append(node)
        if node.kind != "compaction":
            self.ctx += node.est
            self.trailing += node.est

    def _done(self) -> bool:
        if self.max_turns is not None and self.user_turns >= self.max_turns:
            return True
        return self.target is not None and self.bytes >= self.target

    # -------------------------------------------------------------------------------- entries

    def _model_change(self, *, switch: bool = True) -> None:
        if switch:
            self.model = self.rng.choice([m for m in MODELS if m != self.model])
        e = self._base("model_change")
        e["provider"], e["modelId"] = self.model[0], self.model[1]
        self.cached = 0
        self._emit(e, _Node(e["id"], "meta"))

    def _thinking_change(self, *, switch: bool = True) -> None:
        if switch:
            self.thinking = self.rng.choice([t for t in THINKING_LEVELS if t != self.thinking])
        e = self._base("thinking_level_change")
        e["thinkingLevel"] = self.thinking
        self._emit(e, _Node(e["id"], "meta"))

    def _custom(self) -> None:
        rng = self.rng
        e = self._base("custom")
        if rng.random() < 0.5:
            e["customType"] = "todo-list"
            e["data"] = {"items": [{"text": t.title, "done": t.status == "done"} for t in self.tasks[-4:]]}
        else:
            e["customType"] = "plan-mode"
            e["data"] = {"enabled": rng.random() < 0.5, "since": self.now}
        self._emit(e, _Node(e["id"], "meta"))

    def _custom_message(self) -> None:
        ctype, content = self.rng.choice(texts.CUSTOM_MESSAGES)
        e = self._base("custom_message")
        e["customType"] = ctype
        e["content"] = content if self.rng.random() < 0.6 else [{"type": "text", "text": content}]
        e["display"] = self.rng.random() < 0.7
        if self.rng.random() < 0.4:
            e["details"] = {"source": "extension", "checkedAt": self.now}
        self._emit(e, _Node(e["id"], "custom_message", _est(len(content))))

    def _label(self, target: str | None = None) -> None:
        cands = [n.id for n in self.path if n.kind in ("user", "assistant")]
        if not cands and target is None:
            return
        e = self._base("label")
        e["targetId"] = target or self.rng.choice(cands[-30:])
        if self.rng.random() < 0.9:  # absent label = clear
            e["label"] = self.rng.choice(texts.LABELS)
        self._emit(e, _Node(e["id"], "meta"))

    def _user_bash(self) -> None:
        rng = self.rng
        kind = rng.choice(["git_status", "pytest", "ls", "git_log", "logs", "mypy"])
        src = rng.choice(self.project.modules)
        run = tools.bash(self.project, rng, self.cwd, kind, src_path=src, func=rng.choice(self.project.functions(src)),
                         fail=rng.random() < 0.2, cap=self._cap())
        out, _, code_text = run.text.partition("\n\nCommand exited with code ")
        code = int(code_text) if code_text else 0
        if out == "(no output)":
            out = ""
        self._tick(3000, 90000)
        msg: dict[str, Any] = {"role": "bashExecution", "command": run.args["command"], "output": out,
                               "exitCode": code, "cancelled": False, "truncated": False}
        if len(out) > 6000 and rng.random() < 0.5:
            msg["output"] = out[-6000:]
            msg["truncated"] = True
            msg["fullOutputPath"] = f"/tmp/pi-bash-{rng.getrandbits(32):08x}.log"
        msg["timestamp"] = self.now
        if rng.random() < 0.15:
            msg["excludeFromContext"] = True  # `!!` command
        e = self._base("message")
        e["message"] = msg
        self._emit(e, _Node(e["id"], "bash", _est(len(msg["command"]) + len(msg["output"]))))

    def _user(self, task: Task) -> None:
        rng = self.rng
        self._tick(15_000, 400_000 if rng.random() > 0.03 else 30_000_000)
        ts = self.now
        if rng.random() < 0.2:
            content: Any = task.request
            chars = len(task.request)
        else:
            content = [{"type": "text", "text": task.request}]
            chars = len(task.request)
            if rng.random() < 0.02:
                content.append({"type": "image", "data": _tiny_png(rng), "mimeType": "image/png"})
                chars += 4800
        e = self._base("message")
        e["message"] = {"role": "user", "content": content, "timestamp": ts}
        node = _Node(e["id"], "user", _est(chars))
        node.task = len(self.tasks)
        task.user_id = e["id"]
        self.tasks.append(task)
        self.user_turns += 1
        self._emit(e, node)

    def _tool_id(self, name: str) -> str:
        rng = self.rng
        self.tool_seq += 1
        prov = self.model[0]
        if prov == "anthropic":
            return "toolu_01" + "".join(rng.choice(_B62) for _ in range(22))
        if prov == "openai":
            return "call_" + "".join(rng.choice(_B62) for _ in range(24)) + f"|fc_{rng.getrandbits(160):040x}"
        return f"{name}_{self.now}_{self.tool_seq}"

    def _usage(self, out_est: int, *, zero: bool = False) -> dict[str, Any]:
        rng = self.rng
        if zero:
            inp = out = cr = cw = 0
        else:
            prompt = self.sys_tokens + int(self.ctx * self.ratio)
            out = max(1, int(out_est * self.ratio)) + (rng.randint(40, 900) if self.thinking != "off" else 0)
            if self.model[0] == "anthropic":
                cr = min(self.cached, prompt - 1)
                inp = min(rng.randint(1, 12), prompt - cr)
                cw = prompt - cr - inp
            else:
                cr = (min(self.cached, prompt) // 1024) * 1024 if rng.random() < 0.85 else 0
                cw = 0
                inp = prompt - cr
            self.cached = prompt + out
        p = self.model[3]
        cost = {"input": inp * p[0] / 1e6, "output": out * p[1] / 1e6, "cacheRead": cr * p[2] / 1e6,
                "cacheWrite": cw * p[3] / 1e6}
        cost["total"] = cost["input"] + cost["output"] + cost["cacheRead"] + cost["cacheWrite"]
        for k, v in cost.items():  # JS writes integral numbers without ".0"
            if v == int(v):
                cost[k] = int(v)
        return {"input": inp, "output": out, "cacheRead": cr, "cacheWrite": cw,
                "totalTokens": inp + out + cr + cw, "cost": cost}

    def _thinking_block(self, text: str) -> dict[str, Any]:
        block: dict[str, Any] = {"type": "thinking", "thinking": text}
        if self.model[0] == "anthropic":
            block["thinkingSignature"] = base64.b64encode(self.rng.randbytes(self.rng.randint(180, 480))).decode()
        elif self.model[0] == "openai":
            block["thinkingSignature"] = dumps({"type": "reasoning", "id": f"rs_{self.rng.getrandbits(128):032x}",
                                                "summary": []})
        return block

    def _assistant(self, content: list[dict[str, Any]], stop: str, *, error: str | None = None,
                   runs: list[tools.ToolRun] = ()) -> None:  # type: ignore[assignment]
        chars = 0
        for b in content:
            if b["type"] == "text":
                chars += len(b["text"])
            elif b["type"] == "thinking":
                chars += len(b["thinking"])
            elif b["type"] == "toolCall":
                chars += len(b["name"]) + len(dumps(b["arguments"]))
        bad = stop in ("error", "aborted")
        usage = self._usage(_est(chars), zero=bad and self.rng.random() < 0.7)
        started = self.now
        self._tick(600 + usage["output"] * 8, 1500 + usage["output"] * 30)
        msg: dict[str, Any] = {"role": "assistant", "content": content, "api": self.model[2],
                               "provider": self.model[0], "model": self.model[1], "usage": usage,
                               "stopReason": stop, "timestamp": started}
        if error:
            msg["errorMessage"] = error
        e = self._base("message")
        e["message"] = msg
        node = _Node(e["id"], "assistant", _est(chars))
        node.task = len(self.tasks) - 1
        node.stop = stop
        node.ops = tuple((r.name, r.args["path"]) for r in runs if r.name in ("read", "edit", "write"))
        self._emit(e, node)
        if not bad and usage["totalTokens"] > 0:  # K-5 valid usage
            node.total = usage["totalTokens"]
            self.last_total = node.total
            self.trailing = 0

    def _tool_result(self, call_id: str, run: tools.ToolRun) -> None:
        if run.name == "bash":
            self._tick(200, 12_000)
        else:
            self._tick(3, 40)
        msg: dict[str, Any] = {"role": "toolResult", "toolCallId": call_id, "toolName": run.name,
                               "content": [{"type": "text", "text": run.text}]}
        if run.details is not None:
            msg["details"] = run.details
        msg["isError"] = run.is_error
        msg["timestamp"] = self.now
        e = self._base("message")
        e["message"] = msg
        self._emit(e, _Node(e["id"], "toolResult", _est(len(run.text))))

    # ---------------------------------------------------------------------------------- turns

    def _pick_task(self, *, reask: Task | None) -> Task:
        rng = self.rng
        proj = self.project
        path = rng.choice(proj.modules)
        func = rng.choice(proj.functions(path))
        test_path = proj.test_for(path)
        tests = proj.tests
        test_name = rng.choice(proj.functions(rng.choice(tests))) if tests else f"test_{func}"
        follow = reask is None and bool(self.tasks) and rng.random() < 0.3
        prev = reask or (self.tasks[-1] if follow else None)
        if prev is not None:  # a follow-up or a re-asked message stays on the same code
            path, func, test_path = prev.path, prev.func, prev.test_path
        return texts.new_task(rng, self.picker, path, func, test_path, test_name, follow_up=follow,
                              reask=reask is not None)

    # A plan is a list of steps; a step is the tool calls of one assistant message:
    # (kind, path or None, may_fail). Failures insert fix-up steps after the failing one.
    def _plan(self, task: Task, long: bool) -> list[list[tuple[str, str | None, bool]]]:
        rng = self.rng
        proj = self.project
        if task.kind == "question":
            plan = [[("read", task.path, True)]]
            if rng.random() < 0.6:
                plan.insert(0, [("grep", None, False)])
            if rng.random() < 0.5:
                plan.append([("read", None, True), ("read", None, True)][: rng.randint(1, 2)])
            return plan
        plan = []
        if rng.random() < 0.4:
            plan.append([(rng.choice(["grep", "bash:git_status", "bash:logs", "bash:ls", "bash:git_log"]), None, True)])
        first = [("read", task.path, True)]
        if proj.exists(task.test_path) and rng.random() < 0.4:
            first.append(("read", task.test_path, True))
        plan.append(first)
        targets = [task.path] + ([rng.choice(proj.modules) for _ in range(rng.randint(4, 9))] if long else [])
        for n, path in enumerate(targets):
            if n:
                plan.append([("read", path, True)] + ([("grep", None, False)] if rng.random() < 0.3 else []))
            plan.append([("edit", path, True)] + ([("edit", path, True)] if rng.random() < 0.2 else []))
            if rng.random() < 0.35:
                plan.append([("write", None, False)])
            plan.append([("bash:pytest_focused", None, True)])
        tail = rng.choice(["bash:pytest", "bash:pytest_verbose", "bash:ruff", "bash:mypy", "bash:git_diff",
                           "bash:python", "bash:missing", None, None])
        if tail:
            plan.append([(tail, None, True)])
        return plan

    def _fixups(self, run: tools.ToolRun, task: Task) -> list[list[tuple[str, str | None, bool]]]:
        if run.name == "edit":
            p = run.args["path"]
            return [[("read", p, False)], [("edit", p, False)]]
        if run.name == "read":
            return [[("bash:ls", None, False)]]
        cmd = str(run.args.get("command", ""))
        kind = ("bash:ruff" if cmd.startswith("ruff") else "bash:mypy" if cmd.startswith("mypy")
                else "bash:python" if cmd.startswith("python -c") else "bash:pytest_focused")
        if "not found" in run.text:
            return []
        return [[("read", task.path, False)], [("edit", task.path, False)], [(kind, None, False)]]

    def _run(self, kind: str, path: str | None, may_fail: bool, task: Task) -> tools.ToolRun:
        rng = self.rng
        proj = self.project
        other = rng.choice(proj.modules)
        if kind == "read":
            if may_fail and rng.random() < 0.04:
                path = f"src/{proj.pkg}/{rng.choice(['compat', 'legacy', 'helpers'])}.py"  # does not exist
            run = tools.read(proj, rng, path or other, self.cwd, cap=self._cap())
        elif kind == "edit":
            path = path or task.path
            func = task.func if path == task.path else rng.choice(proj.functions(path))
            run = tools.edit(proj, rng, path, func, fail=may_fail and rng.random() < 0.1)
        elif kind == "write":
            dest = task.test_path if not proj.exists(task.test_path) else f"tests/test_{task.func}_regressions.py"
            run = tools.write(proj, rng, dest, task.path)
        elif kind == "grep":
            run = tools.grep(proj, rng, task.func if rng.random() < 0.85 else "TODO")
            run.text = tools._cap_head(run.text, self._cap())
        else:
            bash_kind = kind.split(":", 1)[1]
            p_fail = 0.35 if bash_kind.startswith("pytest") else 0.2
            run = tools.bash(proj, rng, self.cwd, bash_kind, src_path=task.path, func=task.func,
                             test_path=task.test_path if proj.exists(task.test_path) else None,
                             fail=may_fail and rng.random() < p_fail, cap=self._cap())
        if run.modified and run.args["path"] not in task.files:
            task.files.append(run.args["path"])
        if run.is_error and run.error_line:
            task.errors.append(run.error_line)
        return run

    def _turn(self) -> None:
        rng = self.rng
        s = self.k.extras_scale
        if self.path:
            if rng.random() < 0.05 * s:
                self._model_change()
            if rng.random() < 0.05 * s:
                self._thinking_change()
            if rng.random() < 0.04 * s:
                self._custom()
            if rng.random() < 0.03 * s:
                self._custom_message()
            if rng.random() < 0.05 * s:
                self._user_bash()
            if rng.random() < 0.03 * s:
                self._label()
        reask = self._maybe_navigate()
        task = self._pick_task(reask=reask)
        self._user(task)
        long = task.kind != "question" and self.split_turns and rng.random() < self.k.long_turn_prob
        plan = self._plan(task, long)
        fixes = 0
        overflowed = False
        error: str | None = None
        step = 0
        while step < len(plan):
            items = plan[step]
            runs = [self._run(kind, path, may_fail, task) for kind, path, may_fail in items]
            kind0 = items[0][0]
            doing = kind0.split(":")[0]
            content: list[dict[str, Any]] = []
            if self.thinking != "off" and rng.random() < 0.75:
                content.append(self._thinking_block(
                    texts.thinking(rng, task, step, long=long, error=error, doing=doing)))
            txt = texts.step_text(rng, task, kind0, error=error is not None)
            if txt and rng.random() < 0.5:
                content.append({"type": "text", "text": txt})
            ids = [self._tool_id(r.name) for r in runs]
            content += [{"type": "toolCall", "id": i, "name": r.name, "arguments": r.args} for i, r in zip(ids, runs)]
            self._assistant(content, "toolUse", runs=runs)
            for i, r in zip(ids, runs):
                self._tool_result(i, r)
            step += 1
            failed = next((r for r in runs if r.is_error), None)
            error = failed.error_line or failed.text[:200] if failed else None
            if failed and fixes < 2 and rng.random() < 0.85:
                fixes += 1
                plan[step:step] = self._fixups(failed, task)
            if self.target is not None and self.bytes >= self.target:
                break
            if (self.compactions and not overflowed and step < len(plan)
                    and self.sys_tokens + self.ctx * self.ratio > self.window):
                overflowed = True  # one compact-and-retry per turn, as Pi does
                self._overflow()
        self._finish(task, error is not None)
        if self.compactions and self.last_total > self.threshold:
            self._compact()

    def _finish(self, task: Task, failing: bool) -> None:
        rng = self.rng
        r = rng.random()
        if r < 0.02:  # the user pressed Esc mid-answer
            self._assistant([{"type": "text", "text": "Let me summarize what"}] if rng.random() < 0.5 else [],
                            "aborted", error="Request was aborted.")
            task.status = "in_progress"
            return
        if r < 0.035:  # transient provider failure, then the automatic retry answers
            self._assistant([], "error", error=rng.choice([
                '529 {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}',
                "fetch failed: ECONNRESET", "500 Internal server error"]))
        content: list[dict[str, Any]] = []
        if self.thinking != "off" and rng.random() < 0.5:
            content.append(self._thinking_block(texts.thinking(rng, task, 99, doing="final")))
        passed = len(tools.all_tests(self.project))
        content.append({"type": "text", "text": texts.final_reply(rng, task, passed, rng.uniform(0.5, 9))})
        self._assistant(content, "stop")
        task.status = "blocked" if failing and task.errors and rng.random() < 0.5 else "done"

    # ---------------------------------------------------------------------- compaction & branches

    def _file_ops(self, nodes: list[_Node], read: list[str], modified: list[str]) -> tuple[list[str], list[str]]:
        r = dict.fromkeys(read)
        m = dict.fromkeys(modified)
        for n in nodes:
            for tool, p in n.ops:
                (r if tool == "read" else m)[p] = None
        return sorted(p for p in r if p not in m), sorted(m)

    def _tasks_in(self, nodes: list[_Node]) -> list[Task]:
        seen = dict.fromkeys(n.task for n in nodes if n.task >= 0)
        return [self.tasks[i] for i in seen]

    def _overflow(self) -> None:
        prompt = self.sys_tokens + int(self.ctx * self.ratio)
        self._assistant([], "error", error=f"prompt is too long: {prompt} tokens > {self.window} maximum")
        self._compact(mid_turn=True)

    def _compact(self, *, mid_turn: bool = False) -> None:
        rng = self.rng
        path = self.path
        end = len(path)
        prev_details: tuple[list[str], list[str]] = ([], [])
        start = 0
        if self.comp_idx is not None:
            prev = path[self.comp_idx]
            start = self.pos.get(prev.first_kept or "", self.comp_idx + 1)  # R-3 [PI-NEW]
            prev_details = prev.details or ([], [])
        allowed = ("user", "assistant") if self.split_turns else ("user",)
        valid = [i for i in range(start, end) if path[i].kind in allowed]
        if not valid:
            return
        acc = 0
        cut = valid[0]
        for i in range(end - 1, start - 1, -1):
            if path[i].kind != "compaction":
                acc += path[i].est
            if acc >= self.keep:
                later = [j for j in valid if j >= i]
                cut = later[0] if later else valid[-1]  # D-14: never keep a huge trailing result alone
                break
        turn_start = -1
        if path[cut].kind == "assistant":
            for j in range(cut, start - 1, -1):
                if path[j].kind in ("user", "bash", "custom_message", "branch_summary"):
                    turn_start = j
                    break
        history_end = turn_start if turn_start >= 0 else cut
        history = [n for n in path[start:history_end] if n.kind != "compaction"]
        prefix = path[turn_start:cut] if turn_start >= 0 else []
        if not history and not prefix:
            return
        read, modified = self._file_ops(history + prefix, *prev_details)
        users: list[_Node] = []  # the newest 25 turns before the kept part are enough for "Done"
        i = history_end - 1
        while i >= 0 and len(users) < 25:
            if path[i].kind == "user":
                users.append(path[i])
            i -= 1
        done = self._tasks_in(users[::-1])
        active = self._tasks_in(prefix[:1]) if prefix else []
        if mid_turn and not active:
            active = self.tasks[-1:]
        done = [t for t in done if t not in active]
        errors = [e for t in done + active for e in t.errors][-4:]
        nxt = [f"Finish: {t.title}" for t in active] + [
            "Run `python -m pytest -q` and `ruff check src tests` before the next change",
            "Ask the user whether the remaining warnings matter"]
        critical = [f"Package `{self.project.pkg}` under src/, tests under tests/",
                    f"Working directory: {self.cwd}"] + [f"Last error seen: `{e}`" for e in errors]
        summary = texts.structured_summary(done, active, next_steps=nxt, critical=critical) if history else "No prior history."
        if prefix:
            early = [f"{tool} {p}" for n in prefix for tool, p in n.ops][:12]
            summary += texts.SPLIT_TURN_SEPARATOR + texts.turn_prefix_summary(active[0] if active else self.tasks[-1], early)
        summary += texts.file_tags(read, modified)
        tokens_before = self.last_total + self.trailing
        self._tick(4000, 60_000)  # the summarization call takes a while
        e = self._base("compaction")
        e["summary"] = summary
        e["firstKeptEntryId"] = path[cut].id
        e["tokensBefore"] = tokens_before
        e["details"] = {"readFiles": read, "modifiedFiles": modified}
        if rng.random() < 0.5:  # [PI-LATEST] usage of the summarization call
            saved_cached, saved_ctx = self.cached, self.ctx
            self.cached = 0
            self.ctx = sum(n.est for n in history + prefix)
            e["usage"] = self._usage(_est(len(summary)))
            self.cached, self.ctx = saved_cached, saved_ctx
        node = _Node(e["id"], "compaction", _est(len(summary)))
        node.first_kept = path[cut].id
        node.details = (read, modified)
        self._emit(e, node)
        self.comp_idx = len(self.path) - 1
        self._recount()
        self.cached = self.sys_tokens

    def _recount(self) -> None:
        """Recompute the context estimate and last usage for the current path (after compaction/navigation)."""
        path = self.path
        ci = self.comp_idx
        if ci is None:
            self.ctx = sum(n.est for n in path)
        else:
            fk = self.pos.get(path[ci].first_kept or "", ci)
            self.ctx = path[ci].est + sum(n.est for n in path[fk:ci] if n.kind != "compaction") + \
                sum(n.est for n in path[ci + 1:])
        self.last_total = 0
        self.trailing = 0
        for n in reversed(path):
            if n.total:
                self.last_total = n.total
                break
            if n.kind == "compaction":
                break
            self.trailing += n.est

    def _maybe_navigate(self) -> Task | None:
        """Maybe move the leaf back (B-22) with a branch summary; returns the task navigated back to."""
        rng = self.rng
        k = self.k
        if not self.branches:
            return None
        if k.branch_turns is not None:
            if self.user_turns not in k.branch_turns:
                return None
        elif rng.random() >= k.branch_prob:
            return None
        floor = self.comp_idx if self.comp_idx is not None else -1
        users = [i for i in range(len(self.path) - 1, floor, -1) if self.path[i].kind == "user"][:4]
        if not users:
            return None
        lo = users[-1]
        cands = [i for i in range(lo, len(self.path))
                 if (self.path[i].kind == "user" and i >= 1)
                 or (self.path[i].kind == "assistant" and self.path[i].stop == "stop" and i < len(self.path) - 1)]
        if not cands:
            return None
        target = rng.choice(cands)
        target_task = self.tasks[self.path[target].task] if self.path[target].task >= 0 else None
        new_pos = target - 1 if self.path[target].kind == "user" else target  # B-22
        old_leaf = self.path[-1].id
        abandoned = self.path[new_pos + 1:]
        prior_r: list[str] = []
        prior_m: list[str] = []
        for n in abandoned:  # B-6: earlier generated branch summaries pass their file lists on
            if n.kind == "branch_summary" and n.details:
                prior_r += n.details[0]
                prior_m += n.details[1]
        read, modified = self._file_ops(abandoned, prior_r, prior_m)
        left = self._tasks_in(abandoned)
        body = texts.structured_summary(
            [t for t in left if t.status == "done"], [t for t in left if t.status != "done"],
            next_steps=["Decide whether anything from the abandoned attempt should be kept"], critical=[],
            with_critical=False)
        summary = texts.BRANCH_PREAMBLE + body + texts.file_tags(read, modified)
        # truncate the path to the new position
        for n in self.path[new_pos + 1:]:
            self.pos.pop(n.id, None)
        del self.path[new_pos + 1:]
        if self.comp_idx is not None and self.comp_idx > new_pos:
            self.comp_idx = next((i for i in range(new_pos, -1, -1) if self.path[i].kind == "compaction"), None)
        self._recount()
        self.cached = min(self.cached, self.sys_tokens + int(self.ctx * self.ratio))
        self._tick(20_000, 240_000)
        e = self._base("branch_summary")
        e["fromId"] = old_leaf  # D-5: the entry navigated away from
        e["summary"] = summary
        e["details"] = {"readFiles": read, "modifiedFiles": modified}
        if rng.random() < 0.5:
            saved_cached, saved_ctx = self.cached, self.ctx
            self.cached = 0
            self.ctx = sum(n.est for n in abandoned)
            e["usage"] = self._usage(_est(len(summary)))
            self.cached, self.ctx = saved_cached, saved_ctx
        node = _Node(e["id"], "branch_summary", _est(len(summary)))
        node.details = (read, modified)
        self._emit(e, node)
        if rng.random() < 0.2:
            self._label(target=e["id"])
        return target_task

    # ----------------------------------------------------------------------------------- driver

    def run(self) -> Iterator[str]:
        header = {"type": "session", "version": 3, "id": self.session_id, "timestamp": iso_ms(self.start_ms),
                  "cwd": self.cwd}
        line = dumps(header)
        self.bytes += len(line.encode()) + 1
        yield line
        self._model_change(switch=False)
        self._thinking_change(switch=False)
        while not self._done():
            self._turn()
            yield from self.out
            self.out.clear()
        yield from self.out
        self.out.clear()


def generate_session(*, seed: int, target_bytes: int | None = None, turns: int | None = None,
                     branches: bool = True, compactions: bool = True, split_turns: bool = True,
                     cwd: str = "/home/dev/project", session_id: str | None = None) -> Iterator[str]:
    """Yield the JSONL lines (without newline) of a generated Pi v3 session, header first.

    Stops after about `target_bytes` bytes (finishing the current step and turn) or after `turns`
    user turns, whichever comes first; with neither, after DEFAULT_TURNS turns.
    """
    return _generate(seed=seed, target_bytes=target_bytes, turns=turns, branches=branches,
                     compactions=compactions, split_turns=split_turns, cwd=cwd, session_id=session_id)


def _generate(*, knobs: _Knobs = _Knobs(), **kw: Any) -> Iterator[str]:
    return _Sim(knobs=knobs, **kw).run()


def write_session(path: str | Path, **kw: Any) -> Path:
    """Write `generate_session(**kw)` to `path` (one line per entry, `\\n`-terminated)."""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w", encoding="utf-8", newline="\n") as fh:
        for line in generate_session(**kw):
            fh.write(line)
            fh.write("\n")
    return out


# The shipped sample: 5 turns, one navigation (before the 4th turn) with a branch summary, no
# compaction yet (so `compact` has work to do), tool outputs capped at 4000 chars to stay small.
# Refresh the shipped copy after changing the generator: `compactd sample server/compactd/samples/sample.jsonl`.
SAMPLE_SEED = 15
SAMPLE_TURNS = 5
_SAMPLE_KNOBS = _Knobs(branch_turns=frozenset({3}), long_turn_prob=0.0, extras_scale=0.0, result_cap=4000)
SAMPLE_PATH = Path(__file__).with_name("sample.jsonl")


def sample_lines() -> Iterator[str]:
    return _generate(knobs=_SAMPLE_KNOBS, seed=SAMPLE_SEED, target_bytes=None, turns=SAMPLE_TURNS,
                     branches=True, compactions=False, split_turns=True, cwd="/home/dev/project",
                     session_id=None)


def sample_session_text() -> str:
    """The small fixed sample session (one branch, no compaction yet) used by the README and demo."""
    return "".join(line + "\n" for line in sample_lines())
