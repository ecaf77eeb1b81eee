"""JSON shapes of the session layer shared by the CLI (`--json`) and the daemon.

These field names are a contract (README, protocol.md): `compactd info|context|tree --json`
print exactly what `session/open`, `session/context` and `session/tree` return.
"""

from __future__ import annotations

from typing import Any

from .context import build_session_context
from .gc_pause import gc_paused
from .steps import step_budget
from .store import Session, SessionView

Entry = dict[str, Any]

PREVIEW_CHARS = 120

_KIND_BY_TYPE = {
    "compaction": "compaction",
    "branch_summary": "branchSummary",
    "custom_message": "customMessage",
    "custom": "custom",
    "label": "label",
    "model_change": "modelChange",
    "thinking_level_change": "thinkingLevel",
    "session_info": "sessionInfo",
    # Pi 1.6 (Q16-21, Q16-33) and oh-my-pi 18 (QO-4, QO-12, QO-14).
    "context_edit": "contextEdit",
    "usage": "usage",
    "model_usage": "usage",
    "title_change": "sessionInfo",
    "service_tier_change": "modelChange",
    "mode_change": "modelChange",
    "reset_boundary": "resetBoundary",
    "credential_pin": "custom",
    "ttsr_injection": "customMessage",
    "session_init": "sessionInfo",
}
_KIND_BY_ROLE = {
    "user": "user",
    "assistant": "assistant",
    "toolResult": "toolResult",
    "bashExecution": "bash",
    "custom": "customMessage",
    "developer": "developer",
    "system": "system",
}


def entry_role(entry: Entry) -> str | None:
    message = entry.get("message") if entry.get("type") == "message" else None
    role = message.get("role") if isinstance(message, dict) else None
    return role if isinstance(role, str) else None


def entry_kind(entry: Entry) -> str:
    """A display kind for side panels: user, assistant, toolResult, bash, compaction, ..."""
    role = entry_role(entry)
    if role is not None:
        return _KIND_BY_ROLE.get(role, role)
    entry_type = str(entry.get("type"))
    return _KIND_BY_TYPE.get(entry_type, entry_type)


_HEAD_CHARS = 4 * PREVIEW_CHARS + 64


def _one_line(text: str) -> str:
    if len(text) > _HEAD_CHARS:
        # Collapsing a prefix of the text yields a prefix of the collapsed text: when that is
        # already too long for the preview, the rest (often kilobytes of tool output) is not needed.
        head = " ".join(text[:_HEAD_CHARS].split())
        if len(head) > PREVIEW_CHARS:
            return head[: PREVIEW_CHARS - 1] + "…"
    line = " ".join(text.split())
    return line if len(line) <= PREVIEW_CHARS else line[: PREVIEW_CHARS - 1] + "…"


def _blocks_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    parts: list[str] = []
    for block in content:
        if not isinstance(block, dict):
            continue
        if block.get("type") == "text":
            parts.append(str(block.get("text", "")))
        elif block.get("type") == "toolCall":
            args = block.get("arguments")
            target = ""
            if isinstance(args, dict):
                for key in ("path", "command", "pattern", "query"):
                    if isinstance(args.get(key), str):
                        target = args[key]
                        break
            parts.append(f"{block.get('name', '?')}({target})")
        elif block.get("type") == "image":
            parts.append("[image]")
    return " ".join(p for p in parts if p)


def entry_preview(entry: Entry) -> str:
    """One line describing an entry, for tree views."""
    entry_type = entry.get("type")
    if entry_type == "message":
        message = entry.get("message")
        if not isinstance(message, dict):  # damaged entry: preview it, never crash the tree
            return "[invalid message]"
        role = message.get("role")
        if role == "bashExecution":
            return _one_line(f"$ {message.get('command', '')}")
        if role == "toolResult":
            prefix = f"{message.get('toolName', 'tool')}: "
            return _one_line(prefix + _blocks_text(message.get("content")))
        if role == "system":
            return _system_preview(message)
        if role == "assistant" and message.get("stopReason") in ("error", "aborted") and message.get("errorMessage"):
            return _one_line(f"[{message['stopReason']}] {message['errorMessage']}")
        text = _one_line(_blocks_text(message.get("content")))
        if not text and role == "assistant":
            return _thinking_only(message.get("content"))
        return text
    if entry_type in ("compaction", "branch_summary"):
        return _one_line(str(entry.get("summary", "")))
    if entry_type == "custom_message":
        return _one_line(_blocks_text(entry.get("content")))
    if entry_type == "model_change":
        model = f"{entry.get('provider')}/{entry.get('modelId')}" if entry.get("provider") else _text(entry.get("model"))
        return f"model: {model or '(not named)'}"
    if entry_type == "thinking_level_change":
        # oh-my-pi writes a null level (and `configured`) when the level is left to the model.
        level = _text(entry.get("thinkingLevel"))
        configured = _text(entry.get("configured"))
        if level:
            return f"thinking: {level}"
        return f"thinking: {configured} (no fixed level)" if configured else "thinking: model default"
    if entry_type == "label":
        return f"label: {entry.get('label') or '(cleared)'}"
    if entry_type == "session_info":
        return f"name: {entry.get('name') or '(cleared)'}"
    if entry_type == "title_change":
        return _one_line(f"title: {_text(entry.get('title')) or '(cleared)'}")
    if entry_type == "custom":
        return _custom_preview(entry)
    if entry_type == "context_edit":
        # Which message is taken out of (or rewritten in) the model's context; the tree panel adds
        # the target's own preview (it has the other entries).
        return "context edit: omits a message" if entry.get("replacement") is None else "context edit: replaces a message"
    if entry_type in ("usage", "model_usage"):
        return _usage_preview(entry)
    if entry_type == "service_tier_change":
        return f"service tier: {_text(entry.get('serviceTier')) or 'default'}"
    if entry_type == "mode_change":
        return f"mode: {_text(entry.get('mode')) or '(not named)'}"
    if entry_type == "reset_boundary":
        return "context cleared (/clear): the model starts again after this"
    if entry_type == "credential_pin":
        return f"credentials pinned for {_text(entry.get('provider')) or 'a provider'}"
    if entry_type == "session_init":
        return "session started"
    if entry_type == "ttsr_injection":
        return _one_line("injected rule: " + (_blocks_text(entry.get("content")) or _text(entry.get("rule")) or "(no text)"))
    return f"{entry_type} entry" if isinstance(entry_type, str) else "entry of unknown type"


def context_edit_preview(entry: Entry, target: Entry | None) -> str:
    """A context edit's row says what it takes out: the target's kind and text, not its id."""
    own = entry_preview(entry)
    if target is None:
        return f"{own} (not in this file)"
    text = entry_preview(target)
    return f"{own}: {entry_kind(target)} “{text[:60] + '…' if len(text) > 60 else text}”"


def context_edit_marks(entries: list[Entry]) -> dict[str, str]:
    """Pi 1.6 context edits by target, in file order (the latest edit wins, Q16-28): "omitted"
    (`replacement` null) or "replaced"."""
    marks: dict[str, str] = {}
    for entry, _ in zip(entries, step_budget(len(entries))):
        target = entry.get("targetId") if entry.get("type") == "context_edit" else None
        if isinstance(target, str):
            marks[target] = "omitted" if entry.get("replacement") is None else "replaced"
    return marks


def _text(value: Any) -> str:
    """A field as display text: strings as they are, absent or null as nothing (never "None")."""
    if value is None:
        return ""
    return value if isinstance(value, str) else str(value)


def _custom_preview(entry: Entry) -> str:
    custom = _text(entry.get("customType")) or "(untyped)"
    data = entry.get("data")
    if custom == "tool_execution_start" and isinstance(data, dict):
        return f"tool started: {_text(data.get('toolName')) or 'a tool'}"
    if custom == "session_exit":
        return "session exited"
    return f"extension data: {custom}"


def _usage_preview(entry: Entry) -> str:
    """`usage` (Pi 1.6 cache warming) and `model_usage` (oh-my-pi side calls): what ran and its tokens."""
    what = _text(entry.get("kind")) or _text(entry.get("purpose")) or "model call"
    model = entry.get("model")
    where = f"{_text(entry.get('provider'))}/{_text(model)}" if entry.get("provider") and model else _text(model)
    usage = entry.get("usage")
    total = usage.get("totalTokens") if isinstance(usage, dict) else None
    parts = [f"usage: {what.replace('_', ' ')}"]
    if where:
        parts.append(where)
    if isinstance(total, int | float) and not isinstance(total, bool):
        parts.append(f"{int(total):,} tokens")
    return _one_line(" · ".join(parts))


def _thinking_only(content: Any) -> str:
    """An answer with no text or tool call: its thinking, said to be thinking (or that it is empty)."""
    if isinstance(content, list):
        for block in content:
            if isinstance(block, dict) and block.get("type") == "thinking":
                thought = _text(block.get("thinking"))
                return _one_line(f"(thinking) {thought}") if thought.strip() else "(thinking, text not kept)"
    return "(empty answer)"


def _system_preview(message: dict[str, Any]) -> str:
    """Pi 1.6 prompt state (Q16-2): which sections and tools changed, not the prompt text."""
    parts: list[str] = []
    text = _blocks_text(message.get("content"))
    if text:
        parts.append(text)
    sections = message.get("sections")
    if isinstance(sections, dict) and sections:
        parts.append("sections: " + ", ".join(str(name) for name in sections))
    for field, label in (("toolsAdded", "tools +"), ("toolsRemoved", "tools -")):
        tools = message.get(field)
        if isinstance(tools, list) and tools:
            parts.append(label + ", ".join(str(t.get("name")) for t in tools if isinstance(t, dict)))
    return _one_line("system: " + ("; ".join(parts) if parts else "(empty)"))


def info_report(session: Session) -> dict[str, Any]:
    return {
        "sessionId": session.session_id,
        "version": session.header.get("version"),
        "migratedFrom": session.migrated_from,
        "entryCount": len(session.entries),
        "leafId": session.leaf_id,
        "warnings": [{"line": w.line, "message": w.message} for w in session.warnings],
        "path": str(session.path) if session.path is not None else None,
        "cwd": session.cwd,
        "name": session.get_session_name(),
    }


_UNSET: Any = object()


def context_report(session: Session | SessionView, leaf_id: Any = _UNSET) -> dict[str, Any]:
    """`leaf_id` omitted → the session's leaf; None → the empty context (X-1)."""
    leaf = session.leaf_id if leaf_id is _UNSET else leaf_id
    with gc_paused(len(session.by_id)):  # one small dict per message, none cyclic (see `prepare_report`)
        return _context_report(session, leaf)


def _context_report(session: Session | SessionView, leaf: Any) -> dict[str, Any]:
    ctx = build_session_context(session.entries, leaf, session.by_id)
    return {
        "leafId": leaf if leaf is None or leaf in session.by_id else (session.entries[-1]["id"] if session.entries else None),
        "model": ctx.model,
        "thinkingLevel": ctx.thinking_level,
        "messages": [  # (the budget lets other threads in: compactd/session/steps.py)
            {"role": message.get("role"), "entryId": entry_id}
            for message, entry_id, _ in zip(ctx.messages, ctx.entry_ids, step_budget(len(ctx.messages)))
        ],
    }


TREE_STEP_CHUNK = 256


def tree_report(session: Session | SessionView) -> dict[str, Any]:
    """Every entry as a node in tree order (depth first, children by timestamp)."""
    with gc_paused():  # hundreds of thousands of small containers, none of them cyclic
        return _tree_report(session)


def _tree_report(session: Session | SessionView) -> dict[str, Any]:
    branch = session.get_branch() if session.leaf_id is not None else []
    on_path = {e["id"] for e, _ in zip(branch, step_budget(len(branch)))}
    edits = context_edit_marks(session.entries)
    by_id = session.by_id
    nodes: list[dict[str, Any]] = []
    stack = list(reversed(session.get_tree()))
    # A node is ~10 us: 2048 of them held other threads ~20 ms (issue 29: at most 20 ms waits).
    budget = step_budget(len(session.entries), TREE_STEP_CHUNK)
    while stack:
        next(budget, None)  # lets other threads in now and then (compactd/session/steps.py)
        node = stack.pop()
        entry = node.entry
        eid = entry["id"]
        if entry.get("type") == "context_edit":
            target_id = entry.get("targetId")
            preview = context_edit_preview(entry, by_id.get(target_id) if isinstance(target_id, str) else None)
        else:
            preview = entry_preview(entry)
        out: dict[str, Any] = {
            "id": eid,
            "parentId": entry.get("parentId"),
            "type": entry.get("type"),
            "role": entry_role(entry),
            "children": [child.entry["id"] for child in node.children],
            "label": node.label,
            "kind": entry_kind(entry),
            "preview": preview,
            "timestamp": entry.get("timestamp"),
            "isLeaf": eid == session.leaf_id,
            "onLeafPath": eid in on_path,
        }
        edit = edits.get(eid)
        if edit is not None:
            out["contextEdit"] = edit
        nodes.append(out)
        stack.extend(reversed(node.children))
        node.children = []  # (the tree is freed node by node, not in one 40 ms call at the end)
    return {"leafId": session.leaf_id, "nodes": nodes}
