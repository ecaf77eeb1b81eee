"""Session builders for compaction tests: a small fluent builder for hand-made paths and trees,
and a hypothesis strategy that generates well-formed random sessions (tool results always follow
the assistant message that called them, as Pi writes them)."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st

Entry = dict[str, Any]

USAGE = {
    "input": 100,
    "output": 50,
    "cacheRead": 0,
    "cacheWrite": 0,
    "totalTokens": 150,
    "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
}


def usage(total: int = 150, **fields: int) -> dict[str, Any]:
    out = dict(USAGE, totalTokens=total)
    out.update(fields)
    return out


def text_block(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def image_block() -> dict[str, Any]:
    return {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}


def tool_call(call_id: str, name: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"type": "toolCall", "id": call_id, "name": name, "arguments": arguments or {}}


def user_msg(content: Any = "hi", ts: int = 1_700_000_000_000) -> dict[str, Any]:
    if isinstance(content, str):
        content = [text_block(content)]
    return {"role": "user", "content": content, "timestamp": ts}


def assistant_msg(
    text: str | None = "ok",
    *,
    calls: list[dict[str, Any]] | None = None,
    thinking: str | None = None,
    stop: str | None = None,
    usage_: dict[str, Any] | None = None,
    ts: int = 1_700_000_000_001,
) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    if thinking is not None:
        content.append({"type": "thinking", "thinking": thinking})
    if text is not None:
        content.append(text_block(text))
    content += calls or []
    return {
        "role": "assistant",
        "content": content,
        "api": "openai-completions",
        "provider": "openai",
        "model": "gpt-4o",
        "usage": usage_ if usage_ is not None else dict(USAGE),
        "stopReason": stop or ("toolUse" if calls else "stop"),
        "timestamp": ts,
    }


def tool_result_msg(call_id: str, name: str, content: Any = "done", ts: int = 1_700_000_000_002) -> dict[str, Any]:
    if isinstance(content, str):
        content = [text_block(content)]
    return {
        "role": "toolResult",
        "toolCallId": call_id,
        "toolName": name,
        "content": content,
        "isError": False,
        "timestamp": ts,
    }


def bash_msg(command: str = "ls", output: str = "a.txt", **extra: Any) -> dict[str, Any]:
    return {"role": "bashExecution", "command": command, "output": output, "exitCode": 0, "cancelled": False,
            "truncated": False, "timestamp": 1_700_000_000_003, **extra}


@dataclass
class Builder:
    """Appends entries like Pi's SessionManager: each new entry is a child of the leaf."""

    entries: list[Entry] = field(default_factory=list)
    leaf: str | None = None
    _ids: Any = field(default_factory=lambda: itertools.count(1))
    _second: int = 0

    def _append(self, entry_type: str, **fields: Any) -> str:
        entry_id = f"e{next(self._ids):03d}"
        self._second += 1
        entry = {
            "type": entry_type,
            "id": entry_id,
            "parentId": self.leaf,
            "timestamp": f"2025-01-01T00:{self._second // 60:02d}:{self._second % 60:02d}.000Z",
            **fields,
        }
        self.entries.append(entry)
        self.leaf = entry_id
        return entry_id

    # messages
    def message(self, message: dict[str, Any]) -> str:
        return self._append("message", message=message)

    def user(self, text: Any = "hi") -> str:
        return self.message(user_msg(text))

    def assistant(self, text: str | None = "ok", **kwargs: Any) -> str:
        return self.message(assistant_msg(text, **kwargs))

    def tool_result(self, call_id: str, name: str, content: Any = "done") -> str:
        return self.message(tool_result_msg(call_id, name, content))

    def bash(self, command: str = "ls", output: str = "a.txt", **extra: Any) -> str:
        return self.message(bash_msg(command, output, **extra))

    # other entry types
    def compaction(self, first_kept: str | None, summary: str = "summary", tokens_before: int = 1000,
                   **extra: Any) -> str:
        fields: dict[str, Any] = {"summary": summary, "tokensBefore": tokens_before, **extra}
        if first_kept is not None:
            fields["firstKeptEntryId"] = first_kept
        return self._append("compaction", **fields)

    def branch_summary(self, summary: str = "branch", from_id: str = "root", **extra: Any) -> str:
        return self._append("branch_summary", fromId=from_id, summary=summary, **extra)

    def custom_message(self, content: Any = "note", custom_type: str = "ext") -> str:
        return self._append("custom_message", customType=custom_type, content=content, display=True)

    def custom(self, custom_type: str = "state", data: Any = None) -> str:
        return self._append("custom", customType=custom_type, data=data)

    def model_change(self, provider: str = "openai", model_id: str = "gpt-4o") -> str:
        return self._append("model_change", provider=provider, modelId=model_id)

    def thinking(self, level: str = "high") -> str:
        return self._append("thinking_level_change", thinkingLevel=level)

    def label(self, target: str, label: str = "mark") -> str:
        return self._append("label", targetId=target, label=label)

    # tree moves
    def branch_from(self, entry_id: str | None) -> Builder:
        self.leaf = entry_id
        return self

    @property
    def by_id(self) -> dict[str, Entry]:
        return {e["id"]: e for e in self.entries}

    def path(self, leaf: str | None = None) -> list[Entry]:
        from compactd.session.tree import path_to

        return path_to(self.by_id, leaf or self.leaf)

    def index(self, entry_id: str) -> int:
        return next(i for i, e in enumerate(self.entries) if e["id"] == entry_id)


# --- hypothesis: random well-formed sessions -----------------------------------------------------

_TEXT = st.text(alphabet=st.sampled_from("abc xyz\n😀é<>/"), min_size=0, max_size=60)
_SIZES = st.sampled_from([0, 1, 10, 100, 400, 2000, 9000])


def _sized_text(draw: Any) -> str:
    return draw(_TEXT) + "w" * draw(_SIZES)


@st.composite
def random_session(draw: Any, max_turns: int = 12) -> Builder:
    """A linear path of turns mixed with every entry type Pi writes, optionally containing
    earlier compactions whose `firstKeptEntryId` points into the path (or nowhere)."""
    b = Builder()
    call_counter = itertools.count(1)
    for _ in range(draw(st.integers(1, max_turns))):
        opener = draw(st.sampled_from(["user", "user", "user", "bash", "custom_message", "branch_summary"]))
        if opener == "user":
            b.user(_sized_text(draw))
        elif opener == "bash":
            b.bash("ls", _sized_text(draw), excludeFromContext=draw(st.booleans()))
        elif opener == "custom_message":
            b.custom_message(_sized_text(draw))
        else:
            b.branch_summary(draw(st.sampled_from(["", "explored x"])))
        for _ in range(draw(st.integers(0, 4))):
            kind = draw(st.sampled_from(["assistant", "tools", "meta"]))
            if kind == "meta":
                draw(st.sampled_from([b.model_change, b.thinking, b.custom]))()
            elif kind == "assistant":
                b.assistant(_sized_text(draw), thinking=draw(st.sampled_from([None, "hmm"])))
            else:
                calls = [
                    tool_call(f"c{next(call_counter)}", draw(st.sampled_from(["read", "edit", "write", "bash"])),
                              {"path": draw(st.sampled_from(["a.py", "b/c.ts", "é.md"]))})
                    for _ in range(draw(st.integers(1, 3)))
                ]
                b.assistant(draw(st.sampled_from([None, "calling"])), calls=calls)
                for call in calls:
                    if draw(st.integers(0, 9)) == 0:
                        b.label(b.leaf or "")  # metadata between a call and its results
                    b.tool_result(call["id"], call["name"], _sized_text(draw))
        if draw(st.integers(0, 5)) == 0 and len(b.entries) > 2:
            path_ids = [e["id"] for e in b.path()]
            target = draw(st.sampled_from(path_ids + ["missing"]))
            b.compaction(target, summary=draw(st.sampled_from(["s1", "previous summary text"])),
                         details={"readFiles": ["old.py"], "modifiedFiles": ["mod.py"]},
                         **({"fromHook": True} if draw(st.booleans()) else {}))
    return b
