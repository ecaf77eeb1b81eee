"""Convert a Claude Code *console* transcript (the terminal output a user saved, e.g. a dev-log) to a
Pi v3 session, so that sessions kept only as console text can be benchmarked like Pi's.

The console shows what the user saw, not the JSONL: a prompt is a `> ` block, an assistant step a
`⏺ ` block (text, or a tool call such as `⏺ Bash(git status)…`), a tool's output the `⎿ ` block
under it (often collapsed by Claude Code: "Read 36 lines (ctrl+r to expand)"). Continuation lines
are indented; terminal wrapping is kept as line breaks. Welcome boxes, spinners and status lines
are dropped. A `═ Previous Conversation Compacted ═` rule marks a compaction: the prompt block
after it is the summary Claude Code's model wrote of the session up to there.

`convert(text, compaction=N)` returns the region the N-th compaction (1-based) summarized — from
the last session start (welcome box) before it, or from the previous compaction when there was
none in between, to the rule — the summary, and the conversation after the summary.

`python -m bench.quality.claude_console IN.md OUT.jsonl --compaction N [--summary OUT.txt] [--after K]`
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .claude_code import Converted

_COMPACTED = re.compile(r"^=+ Previous Conversation Compacted =+\s*$")
_TOOLS = ("Bash", "Read", "Write", "Update", "Edit", "MultiEdit", "Search", "Grep", "Glob", "List", "Task",
          "Call", "Fetch", "WebFetch", "WebSearch", "NotebookRead", "NotebookEdit", "TodoWrite", "TodoRead", "Agent")
_CALL = re.compile(r"^(%s)\((.*)$" % "|".join(_TOOLS), re.DOTALL)
_CHROME = ("⏵⏵", "? for shortcuts", "esc to interrupt", "Context left until auto-compact", "Thinking…")
_KEYED = re.compile(r'(\w+):\s*"((?:[^"\\]|\\.)*)"')


@dataclass
class Block:
    kind: str  # user | text | call | result | compacted | start
    text: str = ""
    line: int = 0


def _dedent(lines: list[str], first: str) -> str:
    body = [first] + [ln[2:] if ln.startswith("  ") else ln.lstrip() for ln in lines]
    return "\n".join(body).strip()


def blocks(text: str) -> Iterator[Block]:
    """The transcript as prompt / assistant text / tool call / tool output blocks, with session
    starts and compaction rules, in order."""
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line, start = lines[i], i
        if line.startswith("╭"):  # the welcome box (a session start) or the input box at the end
            welcome = i + 1 < len(lines) and "Welcome to Claude Code" in lines[i + 1]
            while i < len(lines) and not lines[i].startswith("╰"):
                i += 1
            if welcome:
                yield Block("start", line=start)
            i += 1
            continue
        if _COMPACTED.match(line):
            yield Block("compacted", line=i)
            i += 1
            continue
        marker = next((m for m in ("> ", "⏺ ", "  ⎿") if line.startswith(m)), None)
        if marker is None or any(c in line for c in _CHROME):
            i += 1
            continue
        i += 1
        cont: list[str] = []
        while i < len(lines):  # indented continuation, across blank lines
            nxt = lines[i]
            if nxt.strip() == "":
                ahead = next((ln for ln in lines[i:] if ln.strip()), "")
                if not ahead.startswith("  ") or ahead.startswith("  ⎿") or any(c in ahead for c in _CHROME):
                    break
            elif not nxt.startswith("  ") or nxt.startswith("  ⎿") or any(c in nxt for c in _CHROME):
                break
            cont.append(nxt)
            i += 1
        if marker == "  ⎿":
            yield Block("result", _dedent([ln[3:] if ln.startswith("     ") else ln for ln in cont],
                                          line[3:].strip()), start)
        elif marker == "> ":
            yield Block("user", _dedent(cont, line[2:]), start)
        else:
            body = _dedent(cont, line[2:])
            call = body == "Update Todos" or _CALL.match(body.replace("\n", " ")) is not None
            yield Block("call" if call else "text", body, start)


def _call(body: str) -> tuple[str, dict[str, Any]]:
    """A console tool line as Pi's tool name and arguments (the console shows a one-line summary)."""
    if body == "Update Todos":
        return "todo", {}
    m = _CALL.match(" ".join(body.split()))
    assert m is not None
    name, rest = m.group(1), m.group(2)
    inner = rest[: rest.rfind(")")] if ")" in rest else rest
    keyed = dict(_KEYED.findall(inner))
    if name == "Bash":
        return "bash", {"command": inner}
    if name in ("Read", "Write", "Update", "Edit", "MultiEdit", "List"):
        pi = {"Read": "read", "Write": "write", "List": "ls"}.get(name, "edit")
        return pi, {"path": re.sub(r"^(file_path|path):\s*", "", inner)}  # older versions name the argument
    if name in ("Search", "Grep"):
        return "grep", keyed or {"pattern": inner}
    if name == "Glob":
        return "find", keyed or {"pattern": inner}
    return name, keyed or {"input": inner}


class _Builder:
    def __init__(self, first_id: int = 1) -> None:
        self.first_id = first_id  # entry ids are numbers in hex, continuing across builders
        self.entries: list[dict[str, Any]] = []
        self._calls: list[tuple[str, str]] = []  # calls of the current assistant step waiting for output

    def _add(self, message: dict[str, Any]) -> dict[str, Any]:
        entry = {"type": "message", "id": f"{self.first_id + len(self.entries):08x}", "parentId": None,
                 "timestamp": None, "message": message}
        self.entries.append(entry)
        return entry

    def _assistant(self) -> dict[str, Any]:
        last = self.entries[-1]["message"] if self.entries else None
        if last is not None and last["role"] == "assistant" and not self._calls:
            return last
        return self._add({"role": "assistant", "content": [], "api": "anthropic-messages", "provider": "anthropic",
                          "model": "claude (console transcript)", "stopReason": "stop", "timestamp": 0,
                          "usage": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0,
                                    "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}}})["message"]

    def add(self, block: Block) -> None:
        if block.kind == "user":
            self._calls = []
            self._add({"role": "user", "content": block.text, "timestamp": 0})
        elif block.kind == "text":
            self._assistant()["content"].append({"type": "text", "text": block.text})
        elif block.kind == "call":
            message = self._assistant()
            name, args = _call(block.text)
            call_id = f"call_{self.first_id + len(self.entries)}_{len(message['content'])}"
            message["content"].append({"type": "toolCall", "id": call_id, "name": name, "arguments": args})
            message["stopReason"] = "toolUse"
            self._calls.append((call_id, name))
        elif block.kind == "result":
            if not self._calls:  # output of a slash command the user ran: part of that prompt
                last = self.entries[-1]["message"] if self.entries else None
                if last is not None and last["role"] == "user":
                    last["content"] += "\n" + block.text
                elif last is not None and last["role"] == "toolResult":  # a second ⎿ under one call
                    last["content"][0]["text"] += "\n" + block.text
                return
            call_id, name = self._calls.pop(0)
            rejected = block.text.startswith(("No (tell Claude", "Error", "Interrupted by user"))
            self._add({"role": "toolResult", "toolCallId": call_id, "toolName": name,
                       "content": [{"type": "text", "text": block.text}], "isError": rejected, "timestamp": 0})


def convert(text: str, compaction: int) -> Converted:
    """The region the `compaction`-th compaction summarized, its summary, and what follows it."""
    items = list(blocks(text))
    rules = [i for i, b in enumerate(items) if b.kind == "compacted"]
    if not 1 <= compaction <= len(rules):
        raise ValueError(f"the transcript has {len(rules)} compaction(s); asked for #{compaction}")
    rule = rules[compaction - 1]
    begin = max((i for i, b in enumerate(items[:rule]) if b.kind in ("start", "compacted")), default=-1)
    if begin >= 0 and items[begin].kind == "compacted":
        begin += 1  # skip the previous summary: it is the region's previous summary, not its text
    before = _Builder()
    for b in items[begin + 1: rule]:
        before.add(b)
    summary_at = next((i for i in range(rule + 1, len(items)) if items[i].kind == "user"), None)
    summary = items[summary_at].text if summary_at is not None else None
    after = _Builder(first_id=len(before.entries) + 1)
    for b in items[(summary_at or rule) + 1:]:
        if b.kind in ("start", "compacted"):
            break
        after.add(b)
    header = {"type": "session", "version": 3, "id": "claude-console", "timestamp": None, "cwd": ""}
    return Converted(header, before.entries, summary, after.entries)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.quality.claude_console", description=__doc__.splitlines()[0])
    p.add_argument("source", type=Path)
    p.add_argument("out", type=Path)
    p.add_argument("--compaction", type=int, required=True, help="which compaction (1-based) ends the region")
    p.add_argument("--summary", type=Path, help="write the model-written compaction summary here")
    p.add_argument("--after", type=int, help="keep only this many entries after the compaction")
    args = p.parse_args(argv)
    converted = convert(args.source.read_text(encoding="utf-8"), args.compaction)
    converted.write(args.out, args.summary, args.after)
    return 0


if __name__ == "__main__":
    sys.exit(main())
