"""Convert a Claude Code transcript (`~/.claude/projects/<project>/<session>.jsonl`) to a Pi v3 session,
so that real Claude Code sessions can be benchmarked like Pi's.

Only the conversation is carried over, along the leaf path (`parentUuid` links, walked back from
the last record): user prompts, assistant messages (Claude Code writes one record per content
block; records of one API message are merged back into one Pi assistant message, tool_use →
toolCall, the built-in Read/Write/Edit/Bash/Grep/Glob/LS as Pi's read/write/edit/bash/grep/find/ls)
and tool results (one Pi toolResult message per tool_result block). Progress,
file-history and system records, sidechain and meta records are dropped — except in a subagent's
own transcript (`<session>/subagents/agent-*.jsonl`), where every record is a sidechain and the
sidechain is the conversation. A prompt the user typed
while the agent worked (a `queue-operation` enqueue, taken off the queue by a later `remove`)
becomes a user message before the next assistant step, after the tool results it arrived during. Images become a
`[image]` text block (the fixtures stay small). A compaction (`compact_boundary` + the user
record marked `isCompactSummary`) is where the converted region ends: `convert` returns the
entries before it, the summary Claude Code's model wrote, and the entries after it.

`python -m bench.quality.claude_code IN.jsonl OUT.jsonl [--summary OUT.txt] [--after N]`
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any


@dataclass
class Converted:
    header: dict[str, Any]
    before: list[dict[str, Any]]  # Pi entries before the compaction (all of them when there is none)
    summary: str | None = None  # the summary Claude Code's model wrote at the compaction
    after: list[dict[str, Any]] = field(default_factory=list)  # Pi entries after it

    def lines(self, keep_after: int | None = None) -> list[str]:
        after = self.after if keep_after is None else self.after[:keep_after]
        entries = self.before + after
        prev = None
        for e in entries:  # one linear chain
            e["parentId"] = prev
            prev = e["id"]
        return [json.dumps(self.header, ensure_ascii=False)] + [json.dumps(e, ensure_ascii=False) for e in entries]

    def write(self, out: Path, summary: Path | None, keep_after: int | None) -> None:
        """The session to `out`, the model-written summary (if any) to `summary`, and a line on stderr."""
        out.write_text("\n".join(self.lines(keep_after)) + "\n", encoding="utf-8")
        if summary and self.summary is not None:
            summary.write_text(self.summary, encoding="utf-8")
        print(f"{len(self.before)} entries before the compaction, {len(self.after)} after; "
              f"summary {'found' if self.summary else 'none'}", file=sys.stderr)


def _pi_tool(name: str, args: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """Claude Code's built-in file and shell tools as Pi's (same job, Pi's names and argument keys),
    so a converted session reads like one Pi wrote; any other tool keeps its name and arguments."""
    if name == "Read":
        return "read", {"path": args.get("file_path"), **{k: args[k] for k in ("offset", "limit") if k in args}}
    if name == "Write":
        return "write", {"path": args.get("file_path"), "content": args.get("content", "")}
    if name == "Edit":
        return "edit", {"path": args.get("file_path"), "oldText": args.get("old_string", ""),
                        "newText": args.get("new_string", "")}
    if name == "Bash":
        out: dict[str, Any] = {"command": args.get("command", "")}
        if isinstance(args.get("timeout"), (int, float)):
            out["timeout"] = max(1, round(args["timeout"] / 1000))  # Claude Code: ms, Pi: s
        return "bash", out
    if name == "Grep":
        return "grep", {k: args[k] for k in ("pattern", "path", "glob") if k in args}
    if name == "Glob":
        return "find", {k: args[k] for k in ("pattern", "path") if k in args}
    if name == "LS":
        return "ls", {"path": args.get("path")}
    return name, args


def _millis(ts: str | None) -> int:
    if not ts:
        return 0
    return int(datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp() * 1000)


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    parts = []
    for block in content if isinstance(content, list) else []:
        if isinstance(block, dict):
            if block.get("type") == "text":
                parts.append(str(block.get("text", "")))
            elif block.get("type") == "image":
                parts.append("[image]")
    return "\n".join(parts)


def leaf_path(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Records on the path from the root to the last record that has a uuid (file order kept).
    A compact boundary starts a new root; its `logicalParentUuid` continues the path through it."""
    by_uuid = {r["uuid"]: r for r in records if r.get("uuid")}
    order = {id(r): i for i, r in enumerate(records)}

    def last_before(index: int) -> dict[str, Any] | None:
        return next((r for r in reversed(records[:index]) if r.get("uuid") and not r.get("isSidechain")), None)

    last = last_before(len(records))
    chain: list[dict[str, Any]] = []
    seen: set[str] = set()
    while last is not None and last["uuid"] not in seen:
        seen.add(last["uuid"])
        chain.append(last)
        parent = last.get("parentUuid") or last.get("logicalParentUuid")
        if parent in by_uuid:
            last = by_uuid[parent]
        elif last.get("subtype") == "compact_boundary":  # its logical parent is not in the file: go on
            last = last_before(order[id(last)])  # from the record written just before it
        else:
            last = None
    return sorted(chain, key=lambda r: order[id(r)])


class _Builder:
    def __init__(self) -> None:
        self.entries: list[dict[str, Any]] = []
        self.tool_names: dict[str, str] = {}
        self.ids: set[str] = set()
        self._assistant_key: str | None = None

    def _entry(self, record: dict[str, Any], message: dict[str, Any]) -> dict[str, Any]:
        base = str(record.get("uuid", "")).replace("-", "")[:8] or f"{len(self.entries):08x}"
        eid = base
        n = 1
        while eid in self.ids:  # keep ids unique if two uuids share a prefix
            eid, n = f"{base[:6]}{n:02x}", n + 1
        self.ids.add(eid)
        entry = {"type": "message", "id": eid, "parentId": None, "timestamp": record.get("timestamp"), "message": message}
        self.entries.append(entry)
        return entry

    def user(self, record: dict[str, Any]) -> None:
        content = record["message"].get("content")
        ts = _millis(record.get("timestamp"))
        blocks = content if isinstance(content, list) else [{"type": "text", "text": content or ""}]
        texts = [b for b in blocks if isinstance(b, dict) and b.get("type") in ("text", "image")]
        for b in blocks:
            if isinstance(b, dict) and b.get("type") == "tool_result":
                call = str(b.get("tool_use_id", ""))
                self._entry(record, {"role": "toolResult", "toolCallId": call,
                                     "toolName": self.tool_names.get(call, "unknown"),
                                     "content": [{"type": "text", "text": _text_of(b.get("content"))}],
                                     "isError": bool(b.get("is_error")), "timestamp": ts})
        text = _text_of(texts)
        if text.strip():
            self._entry(record, {"role": "user", "content": text, "timestamp": ts})
        self._assistant_key = None

    def assistant(self, record: dict[str, Any]) -> None:
        msg = record["message"]
        blocks = []
        for b in msg.get("content") or []:
            kind = b.get("type")
            if kind == "text" and b.get("text", "").strip():
                blocks.append({"type": "text", "text": b["text"]})
            elif kind == "thinking" and b.get("thinking", "").strip():
                blocks.append({"type": "thinking", "thinking": b["thinking"]})
            elif kind == "tool_use":
                name, args = _pi_tool(str(b.get("name")), dict(b.get("input") or {}))
                self.tool_names[str(b.get("id"))] = name
                blocks.append({"type": "toolCall", "id": b.get("id"), "name": name, "arguments": args})
        if not blocks:
            return
        key = msg.get("id")
        last = self.entries[-1] if self.entries else None
        if key and key == self._assistant_key and last is not None:
            last["message"]["content"].extend(blocks)
            return
        usage = msg.get("usage") or {}
        self._entry(record, {
            "role": "assistant", "content": blocks, "api": "anthropic-messages", "provider": "anthropic",
            "model": msg.get("model", "unknown"),
            "usage": {"input": usage.get("input_tokens", 0), "output": usage.get("output_tokens", 0),
                      "cacheRead": usage.get("cache_read_input_tokens", 0),
                      "cacheWrite": usage.get("cache_creation_input_tokens", 0),
                      "totalTokens": sum(int(usage.get(k, 0) or 0) for k in (
                          "input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")),
                      "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}},
            "stopReason": "toolUse" if any(b["type"] == "toolCall" for b in blocks) else "stop",
            "timestamp": _millis(record.get("timestamp")),
        })
        self._assistant_key = key


def _queued_text(record: dict[str, Any]) -> str | None:
    """What the user typed while the agent worked (a queued prompt), not a background-task notice."""
    text = record.get("content")
    if not isinstance(text, str) or not text.strip() or text.lstrip().startswith("<task-notification>"):
        return None
    return text


def with_queue(records: list[dict[str, Any]], path: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The path with the queue operations interleaved in file order (they have no uuid)."""
    on_path = {id(r) for r in path}
    return [r for r in records if id(r) in on_path or r.get("type") == "queue-operation"]


def is_subagent_transcript(records: list[dict[str, Any]]) -> bool:
    """Every conversation record is a sidechain: the file is a subagent's own transcript."""
    talk = [r for r in records if r.get("type") in ("user", "assistant")]
    return bool(talk) and all(r.get("isSidechain") for r in talk)


def convert(records: list[dict[str, Any]]) -> Converted:
    if is_subagent_transcript(records):  # its sidechain is the conversation, not chatter beside it
        records = [{**r, "isSidechain": False} for r in records]
    path = with_queue(records, leaf_path(records))
    first = next((r for r in path if r.get("sessionId")), {})
    header = {"type": "session", "version": 3, "id": first.get("sessionId", "claude-code"),
              "timestamp": first.get("timestamp"), "cwd": first.get("cwd", "")}
    builder = _Builder()
    before: list[dict[str, Any]] | None = None
    summary = None
    queued: list[str] = []  # prompts typed while the agent worked, in order
    delivered: list[tuple[dict[str, Any], str]] = []  # taken off the queue: shown before the next assistant step
    for r in path:
        if r.get("type") == "queue-operation":
            if r.get("operation") == "enqueue" and (text := _queued_text(r)) is not None:
                queued.append(text)
            elif r.get("operation") == "remove" and queued:
                delivered.append((r, queued.pop(0)))
            continue
        if r.get("type") == "assistant" and delivered and not r.get("isSidechain"):
            for rec, text in delivered:  # after the tool results it arrived during, as Claude Code shows it
                builder.user({**rec, "message": {"role": "user", "content": text}})
            delivered = []
        if r.get("type") == "system" and r.get("subtype") == "compact_boundary" and before is None:
            before, builder.entries = builder.entries, []
            continue
        if r.get("isSidechain") or r.get("isMeta") or r.get("type") not in ("user", "assistant"):
            continue
        if r.get("isCompactSummary"):
            summary = _text_of(r["message"].get("content"))
            continue
        if r["type"] == "user":
            builder.user(r)
        else:
            builder.assistant(r)
    if before is None:
        return Converted(header, builder.entries)
    return Converted(header, before, summary, builder.entries)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.quality.claude_code", description=__doc__.splitlines()[0])
    p.add_argument("source", type=Path)
    p.add_argument("out", type=Path)
    p.add_argument("--summary", type=Path, help="write the model-written compaction summary here")
    p.add_argument("--after", type=int, help="keep only this many entries after the compaction")
    args = p.parse_args(argv)
    records = [json.loads(line) for line in args.source.read_text(encoding="utf-8").splitlines() if line.strip()]
    converted = convert(records)
    converted.write(args.out, args.summary, args.after)
    return 0


if __name__ == "__main__":
    sys.exit(main())
