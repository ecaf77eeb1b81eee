"""Convert a SpecStory transcript (`.specstory/history/*.md`, Markdown v2.x, as SpecStory's CLI writes
it from Claude Code, Codex CLI, Gemini CLI and other agents' sessions) to a Pi v3 session, so that
sessions people committed in that form can be benchmarked like Pi's.

The Markdown is a sequence of messages, each under a heading line `_**User (time)**_` or
`_**Agent (model time)**_`. An agent message is prose, a thinking block
(`<think><details>…</details></think>`) or one tool call (`<tool-use data-tool-type="…"
data-tool-name="…"><details>…</details></tool-use>`): its `<summary>` names the tool (Codex puts the
command there too), then come the arguments as SpecStory rendered them (a description, the command
or path in backticks, a fenced block with a written file's content or a patch) and, last, the
output in a ```text (Codex: bare) fence. Messages under `_**Agent - sidechain …**_` are a subagent's
own turns, which the parent agent never saw (it saw the Task tool's output): they are dropped.
Cursor's transcripts (`<!-- cursor Session … -->`) lay a tool block out differently: `<details>` on its
own line or the next, the summary saying what the call did ("Tool use: **run_terminal_cmd** • Run
command: …", "… • Read file: …"), the command in a ```bash fence and its output in a bare one, and
`</details>` / `</tool-use>` on separate lines; the same reading applies once that is accounted for.

A compaction shows up as a user message starting "This session is being continued from a previous
conversation": the summary Claude Code's model wrote of everything before it. `convert(text,
compaction=N)` returns the entries before the N-th such message (from the previous one, if any), that
summary and the entries after it; `compaction=0` returns the whole transcript.

`python -m bench.quality.specstory IN.md OUT.jsonl [--compaction N] [--summary OUT.txt] [--after K]`
"""

from __future__ import annotations

import argparse
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .claude_code import Converted

_HEADING = re.compile(r"^_\*\*(User|Agent)( - sidechain)?(?: \(([^)]*)\))?\*\*_\s*$")
_TOOL_OPEN = re.compile(r'^<tool-use data-tool-type="([^"]*)" data-tool-name="([^"]*)">(?:<details>)?\s*$')
_TOOL_CLOSE = ("</details></tool-use>", "</tool-use>")
_SUMMARY = re.compile(r"^<summary>Tool use: \*\*(.+?)\*\*(.*?)</summary>\s*$")
_FENCE = re.compile(r"^(`{3,})([\w+-]*)\s*$")
_CONTINUED = "This session is being continued from a previous conversation"
_PATH_IN_RESULT = re.compile(r"created successfully at: (\S+)|The file (\S+) has been")


@dataclass
class Fence:
    lang: str
    text: str


@dataclass
class Tool:
    kind: str  # SpecStory's tool type: shell, read, write, search, task, generic, unknown
    name: str
    inline: str  # what the <summary> line shows after the name (Codex: the command)
    prose: str  # argument lines outside fences (description, `path`, pattern …)
    fences: list[Fence] = field(default_factory=list)


@dataclass
class Message:
    role: str  # user | agent
    sidechain: bool = False
    model: str = ""
    parts: list[str | Tool] = field(default_factory=list)  # text, "<think>" + thinking, or a tool call


def _fences(lines: list[str]) -> tuple[str, list[Fence]]:
    """The lines outside fenced blocks, and the fenced blocks (a fence closes on a bare run of at
    least its own backticks)."""
    outside: list[str] = []
    fences: list[Fence] = []
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            outside.append(lines[i])
            i += 1
            continue
        ticks, lang = m.group(1), m.group(2)
        body: list[str] = []
        i += 1
        while i < len(lines) and not (lines[i].strip().startswith(ticks) and set(lines[i].strip()) == {"`"}):
            body.append(lines[i])
            i += 1
        fences.append(Fence(lang, "\n".join(body)))
        i += 1
    return "\n".join(outside).strip(), fences


def _unwrap(body: list[str]) -> list[str]:
    """A tool block's lines without the `<details>` / `</details>` wrapper lines Cursor's layout adds
    (Claude Code's and Codex's put them on the tool-use lines themselves)."""
    while body and body[0].strip() in ("", "<details>"):
        body = body[1:]
    while body and body[-1].strip() in ("", "</details>"):
        body = body[:-1]
    if body:
        body = [body[0].strip().removeprefix("<details>").strip()] + body[1:]
    return body


def _inline(after_name: str) -> str:
    """What a summary line shows after the tool's name: a Codex command in backticks, or Cursor's
    "• Run command: X" / "• Read file: X" (the X), or its description as written."""
    text = after_name.strip()
    if text.startswith("•"):
        text = text[1:].strip()
        label, sep, value = text.partition(": ")
        if sep and label in ("Run command", "Read file", "Edit file", "Write file"):
            return value.strip()
        return text
    return text.strip("`").strip()


def _agent_parts(lines: list[str]) -> list[str | Tool]:
    parts: list[str | Tool] = []
    text: list[str] = []

    def flush() -> None:
        body = "\n".join(text).strip()
        if body and body != "---":
            parts.append(body)
        text.clear()

    i = 0
    while i < len(lines):
        line = lines[i]
        tool = _TOOL_OPEN.match(line)
        if line.startswith("<think><details>"):
            flush()
            body = []
            i += 1
            while i < len(lines) and not lines[i].startswith("</details></think>"):
                if not lines[i].startswith("<summary>"):
                    body.append(lines[i])
                i += 1
            parts.append("<think>" + "\n".join(body).strip())
            i += 1
        elif tool:
            flush()
            body = []
            i += 1
            while i < len(lines) and lines[i].strip() not in _TOOL_CLOSE:
                body.append(lines[i])
                i += 1
            i += 1
            body = _unwrap(body)
            summary = _SUMMARY.match(body[0]) if body else None
            inline = _inline(summary.group(2)) if summary else ""
            rest = body[1:] if summary else body
            opens = [k for k, ln in enumerate(rest) if _FENCE.match(ln)]
            first = _FENCE.match(rest[opens[0]]) if opens else None
            if tool.group(1) == "shell" and inline and first is not None and not first.group(2):
                # Codex: the command is in the summary and the output is one bare fence, which SpecStory
                # does not escape — a Markdown file printed by `cat` has fences of its own inside
                prose = "\n".join(rest[: opens[0]]).strip()
                fences = [Fence("", "\n".join(rest[opens[0] + 1: opens[-1]]))]
            else:
                prose, fences = _fences(rest)
            parts.append(Tool(tool.group(1), tool.group(2), inline, prose, fences))
        else:
            text.append(line)
            i += 1
    flush()
    return parts


def messages(text: str) -> list[Message]:
    """The transcript's messages in order (the title and comments before the first heading dropped)."""
    out: list[Message] = []
    body: list[str] = []

    def close() -> None:
        if not out:
            return
        msg = out[-1]
        if msg.role == "user":
            content = "\n".join(body).strip()
            if content.endswith("\n---"):  # SpecStory's rule before the agent's turn
                content = content[:-4].rstrip()
            msg.parts = [content] if content else []
        else:
            msg.parts = _agent_parts(body)
        body.clear()

    for line in text.splitlines():
        m = _HEADING.match(line)
        if m:
            close()
            meta = (m.group(3) or "").split()
            model = meta[0] if m.group(1) == "Agent" and len(meta) > 2 else ""
            out.append(Message("user" if m.group(1) == "User" else "agent", bool(m.group(2)), model))
        elif out:
            body.append(line)
    close()
    return out


def _output(tool: Tool) -> tuple[list[Fence], str | None]:
    """The argument fences and the output (the last fence, when it is a ```text one — or a bare one
    after a Codex command; for a question to the user, the `**Answer:**` line SpecStory puts under
    it), None when SpecStory showed no output."""
    fences = list(tool.fences)
    answer = tool.prose.rfind("**Answer:**")
    if answer >= 0:
        tool.prose, reply = tool.prose[:answer].rstrip(), tool.prose[answer:].strip()
        return fences, reply
    if fences and (fences[-1].lang == "text" or (fences[-1].lang == "" and tool.kind == "shell")):
        return fences[:-1], fences.pop().text
    return fences, None


def _first_backticked(prose: str) -> str:
    m = re.search(r"`([^`]+)`", prose)
    return m.group(1) if m else ""


def _pi_call(tool: Tool, args: list[Fence], output: str | None) -> tuple[str, dict[str, Any]]:
    """The call as Pi's tool and arguments where the job is the same (shell, read, write, search),
    else under its own name with the arguments as SpecStory showed them."""
    prose_lines = [ln for ln in tool.prose.splitlines() if ln.strip()]
    description = next((ln for ln in prose_lines if "`" not in ln), "")
    if tool.kind == "shell":
        command = tool.inline or (args[0].text if args else _first_backticked(tool.prose))
        return "bash", {"command": command, **({"description": description} if description else {})}
    if tool.name in ("Read", "read_file", "view"):  # not every "read" type reads a file (WebFetch)
        return "read", {"path": tool.inline or _first_backticked(tool.prose)}
    if tool.kind == "write":
        found = _PATH_IN_RESULT.search(output or "")
        path = tool.inline or _first_backticked(tool.prose) or (found.group(1) or found.group(2) if found else "")
        if tool.name in ("Write", "write_file", "create"):
            return "write", {"path": path, "content": args[0].text if args else ""}
        patch = "\n".join(f.text for f in args)
        return "edit", {"path": path, **({"patch": patch} if patch else {})}
    if tool.name == "Grep" or tool.name == "Glob":
        keyed = dict(re.findall(r"(\w+) `([^`]*)`", tool.prose))
        return ("grep" if tool.name == "Grep" else "find"), keyed or {"pattern": _first_backticked(tool.prose)}
    extra = "\n\n".join([tool.inline, tool.prose] + [f.text for f in args]).strip()
    return tool.name, {"input": extra} if extra else {}


class _Builder:
    def __init__(self, first_id: int = 1) -> None:
        self.first_id = first_id  # entry ids are numbers in hex, continuing across builders
        self.entries: list[dict[str, Any]] = []

    def _add(self, message: dict[str, Any]) -> dict[str, Any]:
        self.entries.append({"type": "message", "id": f"{self.first_id + len(self.entries):08x}", "parentId": None,
                             "timestamp": None, "message": message})
        return message

    def _assistant(self, model: str) -> dict[str, Any]:
        last = self.entries[-1]["message"] if self.entries else None
        if last is not None and last["role"] == "assistant" and last["stopReason"] != "toolUse":
            return last
        zero = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0}
        return self._add({"role": "assistant", "content": [], "api": "specstory-markdown", "provider": "specstory",
                          "model": model or "unknown (SpecStory transcript)", "stopReason": "stop", "timestamp": 0,
                          "usage": {**zero, "totalTokens": 0, "cost": {**zero, "total": 0}}})

    def add(self, msg: Message) -> None:
        if msg.sidechain:
            return
        if msg.role == "user":
            if msg.parts:
                self._add({"role": "user", "content": msg.parts[0], "timestamp": 0})
            return
        for part in msg.parts:
            if isinstance(part, str):
                block = ({"type": "thinking", "thinking": part[7:]} if part.startswith("<think>")
                         else {"type": "text", "text": part})
                self._assistant(msg.model)["content"].append(block)
                continue
            message = self._assistant(msg.model)
            args, output = _output(part)
            name, arguments = _pi_call(part, args, output)
            call_id = f"call_{self.first_id + len(self.entries)}_{len(message['content'])}"
            message["content"].append({"type": "toolCall", "id": call_id, "name": name, "arguments": arguments})
            message["stopReason"] = "toolUse"
            text = output if output is not None else "(no output shown)"
            rejected = text.startswith(("The user doesn't want to proceed", "Error", "<tool_use_error>"))
            self._add({"role": "toolResult", "toolCallId": call_id, "toolName": name,
                       "content": [{"type": "text", "text": text}], "isError": rejected, "timestamp": 0})


def _is_summary(msg: Message) -> bool:
    return msg.role == "user" and not msg.sidechain and bool(msg.parts) and str(msg.parts[0]).startswith(_CONTINUED)


def convert(text: str, compaction: int = 0) -> Converted:
    """The region the `compaction`-th compaction summarized (0: the whole transcript), its summary, and
    what follows it up to the next compaction."""
    items = messages(text)
    marks = [i for i, m in enumerate(items) if _is_summary(m)]
    header = {"type": "session", "version": 3, "id": "specstory", "timestamp": None, "cwd": ""}
    if compaction == 0:
        whole = _Builder()
        for m in items:
            whole.add(m)
        return Converted(header, whole.entries)
    if not 1 <= compaction <= len(marks):
        raise ValueError(f"the transcript has {len(marks)} compaction(s); asked for #{compaction}")
    at = marks[compaction - 1]
    begin = marks[compaction - 2] + 1 if compaction > 1 else 0
    before = _Builder()
    for m in items[begin:at]:
        before.add(m)
    end = marks[compaction] if compaction < len(marks) else len(items)
    after = _Builder(first_id=len(before.entries) + 1)
    for m in items[at + 1:end]:
        after.add(m)
    summary = str(items[at].parts[0])
    return Converted(header, before.entries, summary, after.entries)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.quality.specstory", description=__doc__.splitlines()[0])
    p.add_argument("source", type=Path)
    p.add_argument("out", type=Path)
    p.add_argument("--compaction", type=int, default=0, help="which compaction (1-based) ends the region; 0: none")
    p.add_argument("--summary", type=Path, help="write the model-written compaction summary here")
    p.add_argument("--after", type=int, help="keep only this many entries after the compaction")
    args = p.parse_args(argv)
    try:
        converted = convert(args.source.read_text(encoding="utf-8"), args.compaction)
    except ValueError as e:
        p.error(str(e))
    converted.write(args.out, args.summary, args.after)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
