"""What the model sees: buildSessionContext (spec §4.1, D-3) and convertToLlm (§4.2)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from .clock import iso_to_ms
from .steps import step_budget

Entry = dict[str, Any]
Message = dict[str, Any]

# Our own wording for the wrappers (D-8); the tags and their layout follow.
COMPACTION_SUMMARY_LEAD = (
    "Earlier parts of this conversation were condensed into the summary below to save context space."
)
BRANCH_SUMMARY_LEAD = (
    "Before returning to this point, the conversation explored another branch; here is a summary of it."
)
PRUNED_OUTPUT_NOTICE = "[Output truncated]"

_UNSET: Any = object()


@dataclass
class SessionContext:
    messages: list[Message] = field(default_factory=list)
    # The entry each message came from (for the compaction summary: the compaction entry).
    entry_ids: list[str] = field(default_factory=list)
    thinking_level: str = "off"
    model: dict[str, str] | None = None
    leaf_id: str | None = None

    # Written out: mypyc compiles this one, while the one @dataclass generates runs interpreted
    # (~0.5 us per context, an eighth of a small session's context request). Same parameters.
    def __init__(self, messages: list[Message] | None = None, entry_ids: list[str] | None = None,
                 thinking_level: str = "off", model: dict[str, str] | None = None, leaf_id: str | None = None) -> None:
        self.messages = [] if messages is None else messages
        self.entry_ids = [] if entry_ids is None else entry_ids
        self.thinking_level = thinking_level
        self.model = model
        self.leaf_id = leaf_id


def repaired_message(message: Message) -> Message:
    """F-14: a null/missing `content` reads as [] (developer: "")."""
    if "content" in message and message["content"] is not None:
        return message
    role = message.get("role")
    if role in ("user", "assistant", "toolResult"):
        return {**message, "content": []}
    if role in ("developer", "system"):  # Q16-6
        return {**message, "content": ""}
    return message


def project_entry(entry: Entry) -> list[Message]:
    """X-8: the messages one entry contributes to the context. Compaction entries contribute
    nothing here (D-3): the latest one is placed first by `build_session_context`, older ones
    inside the kept region are skipped. `context_edit` entries contribute nothing (Q16-23)."""
    entry_type = entry.get("type")
    if entry_type == "message":
        message = entry.get("message")
        return [repaired_message(message)] if isinstance(message, dict) else []
    if entry_type == "custom_message":
        content = entry.get("content")
        return [
            {
                "role": "custom",
                "customType": entry.get("customType"),
                "content": [] if content is None else content,
                "display": entry.get("display", True),
                "details": entry.get("details"),
                "timestamp": iso_to_ms(entry.get("timestamp")),
            }
        ]
    if entry_type == "branch_summary":
        summary = entry.get("summary")
        if isinstance(summary, str) and summary:
            return [
                {
                    "role": "branchSummary",
                    "summary": summary,
                    "fromId": entry.get("fromId"),
                    "timestamp": iso_to_ms(entry.get("timestamp")),
                }
            ]
    return []


# --- Pi 1.6: system messages, checkpoints and context edits (addendum §2-§6) ------------------

# Q16-23: roles whose content a non-null `context_edit` replacement swaps.
EDITABLE_ROLES = frozenset({"user", "assistant", "toolResult", "custom"})
# Q16-22: a string replacement for these roles reads as one text block.
_BLOCK_ONLY_ROLES = frozenset({"assistant", "toolResult"})


def is_system_message_entry(entry: Entry) -> bool:
    message = entry.get("message")
    return entry.get("type") == "message" and isinstance(message, dict) and message.get("role") == "system"


def latest_edits(entries: list[Entry]) -> dict[str, Entry]:
    """Q16-23: targetId → the latest `context_edit` among `entries` (path order). Edits aimed at a
    compaction are ignored (OQ-1): the checkpoint and summary are not model content to edit."""
    edit_entries = [e for e in entries if e.get("type") == "context_edit"]
    if not edit_entries:
        return {}
    by_id = {e.get("id"): e for e in entries}
    edits: dict[str, Entry] = {}
    for entry in edit_entries:
        target = entry.get("targetId")
        if not isinstance(target, str):
            continue
        replacement = entry.get("replacement")
        if replacement is not None and not (
            isinstance(replacement, dict) and isinstance(replacement.get("content"), (str, list))
        ):
            continue  # Q16-22: not an edit Pi would have stored
        if by_id.get(target, {}).get("type") == "compaction":
            continue
        edits[target] = entry
    return edits


def apply_edit(messages: list[Message], edit: Entry | None) -> list[Message]:
    """Q16-23: `replacement: null` hides the entry; otherwise editable roles get the new content
    (every other field kept), a string becoming one text block for assistant/toolResult."""
    if edit is None:
        return messages
    replacement = edit.get("replacement")
    if replacement is None:
        return []
    content = replacement["content"]
    out: list[Message] = []
    for message in messages:
        role = message.get("role")
        if role not in EDITABLE_ROLES:
            out.append(message)
            continue
        new = [{"type": "text", "text": content}] if isinstance(content, str) and role in _BLOCK_ONLY_ROLES else content
        out.append({**message, "content": new})
    return out


@dataclass(slots=True)
class ProjectedEntry:
    """One entry of the compaction-aware list and the messages it contributes (Q16-36)."""

    entry: Entry
    messages: list[Message]


def context_entries(path: list[Entry], compaction_index: int | None = None) -> list[Entry]:
    """Q16-35: the whole path without a compaction; else the latest compaction C, the entries
    from `C.firstKeptEntryId` up to C minus system messages (C's checkpoint holds their effect),
    and every entry after C. `compaction_index`: C's index when the caller knows it (-1: none)."""
    if compaction_index is None:
        compaction_index = -1
        for index in range(len(path) - 1, -1, -1):
            if path[index].get("type") == "compaction":
                compaction_index = index
                break
    if compaction_index < 0:
        return list(path)
    compaction = path[compaction_index]
    first_kept = compaction.get("firstKeptEntryId")
    start = compaction_index  # no entry with that id before C: nothing kept
    if path and path[0].get("id") == first_kept:  # a recent path often starts there
        start = 0
    else:  # the entry before C with that id (ids are unique on a path): searched back from C,
        # since the kept range is usually short and what precedes it long
        for index in range(compaction_index - 1, -1, -1):
            if path[index].get("id") == first_kept:
                start = index
                break
    kept = [entry for entry in path[start:compaction_index] if not is_system_message_entry(entry)]
    return [compaction, *kept, *path[compaction_index + 1 :]]


def unedited_context_entries(path: list[Entry]) -> list[Entry] | None:
    """`context_entries(path)` when no `context_edit` is on the path, else None. Then every entry
    of the list but a leading compaction projects on its own (`project_entry`; an older compaction
    to nothing), so callers can skip `project_path` and its object per entry. The types are read
    and searched in one comprehension and C loops: this runs on every request, over paths of tens
    of thousands."""
    types = [entry.get("type") for entry in path]  # (a comprehension beats map(methodcaller(...)) 4x)
    if "context_edit" in types:
        return None
    if "compaction" not in types:
        return path
    types.reverse()
    return context_entries(path, len(types) - 1 - types.index("compaction"))


def leading_compaction_messages(entry: Entry) -> list[Message]:
    """What the latest compaction, first in the context, projects to: its checkpoint system
    message (Q16-15, when stored) and its summary."""
    checkpoint = entry.get("systemMessage")
    summary = compaction_summary_message(entry)
    return [checkpoint, summary] if isinstance(checkpoint, dict) else [summary]


def project_path(path: list[Entry]) -> list[ProjectedEntry]:
    """Q16-36: every entry of `context_entries(path)` with its (edited) messages. The list starts
    with the latest compaction, if any, which projects to its checkpoint system message (Q16-15,
    when stored) and its summary; older compactions in the kept range project to nothing (D-3)."""
    listed = context_entries(path)
    edits = latest_edits(listed)
    out: list[ProjectedEntry] = []
    for index, entry in enumerate(listed):
        if entry.get("type") == "compaction":
            messages: list[Message] = leading_compaction_messages(entry) if index == 0 else []
        elif edits:
            messages = apply_edit(project_entry(entry), edits.get(entry.get("id")))  # type: ignore[arg-type]
        else:
            messages = project_entry(entry)
        out.append(ProjectedEntry(entry, messages))
    return out


def checkpoint_system_message(path: list[Entry]) -> Message | None:
    """Q16-14: what a new compaction at the end of `path` stores as `systemMessage`: the replay
    of the current projection (the previous checkpoint plus every later system message), or None
    when there is nothing to replay (a session no Pi 1.6 has written to). The writer stamps it
    with the compaction's own time."""
    return replay_system_messages([m for item in project_path(path) for m in item.messages])


def replay_system_messages(messages: list[Message]) -> Message | None:
    """Q16-4: fold every system message of `messages` into the current one: text joined by blank
    lines, sections merged by name (null deletes), tools removed then added by name, the first
    one's timestamp. None when there is no system message and no tool."""
    texts: list[str] = []
    sections: dict[str, Any] = {}
    tools: dict[Any, Any] = {}  # keyed by whatever the file holds as a name
    timestamp: Any = None
    seen = False
    for message in messages:
        if message.get("role") != "system":
            continue
        if not seen:
            timestamp = message.get("timestamp")
            seen = True
        text = _text_of_blocks(message.get("content"))
        if text:
            texts.append(text)
        for name, value in (message.get("sections") or {}).items():
            if value is None:
                sections.pop(name, None)
            else:
                sections[name] = value
        for tool in message.get("toolsRemoved") or []:
            if isinstance(tool, dict):
                tools.pop(tool.get("name"), None)
        for tool in message.get("toolsAdded") or []:
            if isinstance(tool, dict):
                tools[tool.get("name")] = tool
    if not seen and not tools:
        return None
    replay: Message = {"role": "system", "content": "\n\n".join(texts)}
    if sections:
        replay["sections"] = sections
    if tools:
        replay["toolsAdded"] = list(tools.values())
    replay["timestamp"] = timestamp
    return replay


# oh-my-pi copies these entry fields onto the summary message for display (QO-15); Pi's entries
# never have them, so Pi's message shape is unchanged.
_OMP_SUMMARY_FIELDS = ("shortSummary", "tokensAfter", "method", "warning")


def compaction_summary_message(entry: Entry) -> Message:
    message: Message = {
        "role": "compactionSummary",
        "summary": entry.get("summary", ""),
        "tokensBefore": entry.get("tokensBefore", 0),
        "timestamp": iso_to_ms(entry.get("timestamp")),
    }
    for name in _OMP_SUMMARY_FIELDS:
        if entry.get(name) is not None:
            message[name] = entry[name]
    return message


def _model_of(entry: Entry) -> dict[str, str] | None:
    if entry.get("type") == "model_change":
        provider, model_id = entry.get("provider"), entry.get("modelId")
        if provider is None and isinstance(entry.get("model"), str) and "/" in entry["model"]:
            provider, model_id = entry["model"].split("/", 1)  # oh-my-pi writes "provider/id"
        if isinstance(provider, str) and isinstance(model_id, str):
            return {"provider": provider, "modelId": model_id}
    return None


def build_session_context(
    entries: list[Entry], leaf_id: Any = _UNSET, by_id: Mapping[str, Entry] | None = None
) -> SessionContext:
    """X-1..X-7. `leaf_id=None` means "no leaf" (empty context); omitted or unknown → last entry."""
    if leaf_id is None or not entries:
        return SessionContext()
    if by_id is None:
        by_id = {e["id"]: e for e in entries}
    if leaf_id is _UNSET or leaf_id not in by_id:
        leaf_id = entries[-1]["id"]
    return context_at(by_id, leaf_id)


def _decides_model(entry: Entry) -> bool:
    """True for an entry that fixes the context's model for every reader walking back from the
    leaf: a usable model change, or an assistant message naming its model."""
    entry_type = entry.get("type")
    if entry_type == "model_change":
        return _model_of(entry) is not None and isinstance(entry.get("modelId"), str)
    if entry_type == "message":
        message = entry.get("message")
        return isinstance(message, dict) and message.get("role") == "assistant" and isinstance(message.get("model"), str)
    return False


def recent_path(by_id: Mapping[str, Entry], leaf_id: str | None, settings: bool = True) -> list[Entry]:
    """The tail of `path_to(by_id, leaf_id)` that the context, its model and thinking level and
    compaction preparation depend on: back to the first kept entry of the latest compaction on the
    path (or just that compaction when it keeps nothing), and at least back to the latest
    thinking-level change and model-deciding entry. Falls back to the whole path when one of those
    is missing. Walking only this tail keeps requests on long sessions independent of their age.
    `settings=False`: without the model and thinking level, for readers of the messages alone (a
    dry run and its context estimate), which then need not walk on, often to the root of a path
    that never changed its thinking level.

    Two loops, one per phase of the walk, so the common step (a message once the model is known,
    before any compaction) costs a few lookups. Both draw on one step budget: a path has at most
    as many entries as the session, more steps mean a parentId cycle.
    """
    tail: list[Entry] = []
    get: Callable[[Any], Entry | None] = by_id.get  # any parentId value, None at the root
    steps = step_budget(len(by_id))
    current = get(leaf_id) if leaf_id is not None else None
    thinking_done = not settings
    model_done = not settings
    # 1. Back to the latest compaction; a message matters only until the model is decided.
    for _ in steps:
        if current is None:
            tail.reverse()
            return tail
        tail.append(current)
        entry_type = current.get("type")
        if entry_type == "message":
            if not model_done and _decides_model(current):
                model_done = True
        elif entry_type == "compaction":
            break
        elif entry_type == "thinking_level_change":
            if isinstance(current.get("thinkingLevel"), str):
                thinking_done = True
        elif not model_done and entry_type == "model_change" and _decides_model(current):
            model_done = True
        current = get(current.get("parentId"))
    else:
        return _cycle_tail(tail, current)
    # 2. Past the compaction to its first kept entry (nothing kept: no id, or its own id, Q16-31)
    # and to the model-deciding entry.
    kept_id = current.get("firstKeptEntryId")
    kept_done = kept_id is None or kept_id == current["id"]
    if not (kept_done and model_done):
        for _ in steps:
            current = get(current.get("parentId"))
            if current is None:
                tail.reverse()
                return tail
            tail.append(current)
            if not kept_done and current["id"] == kept_id:
                kept_done = True
            if current.get("type") == "thinking_level_change" and isinstance(current.get("thinkingLevel"), str):
                thinking_done = True
            if not model_done and _decides_model(current):
                model_done = True
            if kept_done and model_done:
                break
        else:
            return _cycle_tail(tail, get(current.get("parentId")))
    if not thinking_done:
        _extend_to_thinking_change(tail, get, current, len(by_id))
    tail.reverse()
    return tail


def _cycle_tail(tail: list[Entry], current: Entry | None) -> list[Entry]:
    """`recent_path` once its step budget is spent: the walk went on (a parentId cycle) unless
    it has just reached the root."""
    if current is not None:
        tail.append(current)
        _cut_at_repeat(tail)
    tail.reverse()
    return tail


def _extend_to_thinking_change(tail: list[Entry], get: Any, entry: Entry, limit: int) -> None:
    """`recent_path`'s walk once only the thinking level is missing (often to the root, when the
    path never changed it): one check per step, until the tail holds more entries than the
    session (a parentId cycle)."""
    current = entry
    for _ in step_budget(limit + 1 - len(tail)):
        parent = get(current.get("parentId"))
        if parent is None:
            return
        current = parent
        tail.append(current)
        if current.get("type") == "thinking_level_change" and isinstance(current.get("thinkingLevel"), str):
            return
    _cut_at_repeat(tail)


def _cut_at_repeat(tail: list[Entry]) -> None:
    seen: set[str] = set()
    for index, entry in enumerate(tail):
        if entry["id"] in seen:
            del tail[index:]
            return
        seen.add(entry["id"])


def context_at(by_id: Mapping[str, Entry], leaf_id: str) -> SessionContext:
    """`context_from_path(recent_path(by_id, leaf_id), leaf_id)` in one walk back from the leaf,
    without the path: messages are collected newest first (the entries after the latest
    compaction, then its kept range, system messages left out) and the walk goes on only until
    the latest thinking-level change and model-setting entry are known. A context edit among the
    listed entries, or a parentId cycle, hands over to the general projection. The same context
    (tests/compaction/test_context_fast_path.py)."""
    get: Callable[[Any], Entry | None] = by_id.get  # any parentId value, None at the root
    # One step per entry and one to find the root's parent missing: more steps, a parentId cycle.
    steps = step_budget(len(by_id) + 1)
    current = get(leaf_id)
    messages: list[Message] = []  # newest first until the end
    entry_ids: list[str] = []
    # (`messages.append(...)` itself, not a bound method kept in a local: compiled, the first is a
    # direct list append and the second a generic call.)
    found = _Found()
    # 1. Back from the leaf to the latest compaction: every entry's messages.
    for _ in steps:
        if current is None:
            break
        entry_type = current.get("type")
        if entry_type == "message":
            message = current.get("message")
            if isinstance(message, dict):
                if found.model_entry is None and message.get("role") == "assistant":
                    found.model_entry = current
                messages.append(message if message.get("content") is not None else repaired_message(message))
                entry_ids.append(current["id"])
        elif entry_type == "compaction":
            break
        elif entry_type == "context_edit":
            return context_from_path(recent_path(by_id, leaf_id), leaf_id)
        else:
            found.setting(current, entry_type)
            if entry_type == "custom_message" or entry_type == "branch_summary":
                for message in reversed(project_entry(current)):
                    messages.append(message)
                    entry_ids.append(current["id"])
        current = get(current.get("parentId"))
    else:
        if current is not None:
            return context_from_path(recent_path(by_id, leaf_id), leaf_id)
    messages.reverse()
    entry_ids.reverse()
    if current is not None:  # the latest compaction: then its kept range, its own messages first
        compaction = current
        kept = _kept_range(compaction, get, steps, found)
        if kept is None or not _walk_to_settings(kept[0], get, steps, found):
            return context_from_path(recent_path(by_id, leaf_id), leaf_id)
        _, kept_messages, kept_ids = kept
        lead = leading_compaction_messages(compaction)
        messages[:0] = [*lead, *kept_messages]
        entry_ids[:0] = [*[compaction["id"]] * len(lead), *kept_ids]
    return SessionContext(messages=messages, entry_ids=entry_ids, thinking_level=found.thinking_level or "off",
                          model=found.model(), leaf_id=leaf_id)


class _Found:
    """The latest thinking level and model-setting entry met so far by `context_at`'s walk back
    (the first ones met: later ones are never looked at)."""

    __slots__ = ("thinking_level", "model_entry")

    def __init__(self) -> None:
        self.thinking_level: str | None = None
        self.model_entry: Entry | None = None

    def setting(self, entry: Entry, entry_type: Any) -> None:
        """A non-message entry: a thinking-level change or a usable model change."""
        if entry_type == "thinking_level_change":
            level = entry.get("thinkingLevel")
            if self.thinking_level is None and isinstance(level, str):
                self.thinking_level = level
        elif entry_type == "model_change" and self.model_entry is None and _model_of(entry) is not None:
            self.model_entry = entry

    def assistant(self, entry: Entry) -> None:
        """A message entry: an assistant message sets the model."""
        message = entry.get("message")
        if self.model_entry is None and isinstance(message, dict) and message.get("role") == "assistant":
            self.model_entry = entry

    # Asked through methods, not by testing the attributes: a test narrows an attribute's type
    # (say, to None) past the calls that set it, and the compiled module enforces that type.
    def has_model(self) -> bool:
        return self.model_entry is not None

    def has_thinking_level(self) -> bool:
        return self.thinking_level is not None

    def model(self) -> dict[str, str] | None:
        entry = self.model_entry
        if entry is None:
            return None
        if entry.get("type") == "model_change":
            return _model_of(entry)
        message = entry["message"]
        return {"provider": message.get("provider"), "modelId": message.get("model")}


def _kept_range(
    compaction: Entry, get: Any, steps: Iterator[None], found: _Found
) -> tuple[Entry | None, list[Message], list[str]] | None:
    """`context_at`'s walk from the latest compaction back to its first kept entry: where the walk
    stopped, and the kept range's messages oldest first (system messages and older compactions
    contribute none). Nothing is kept when the compaction keeps nothing (no id, or its own id:
    Q16-31) or its first kept entry is not on the path (the walk then ends at the root). None on a
    context edit in the range, or when the steps run out (a parentId cycle)."""
    kept_id = compaction.get("firstKeptEntryId")
    if kept_id is None or kept_id == compaction["id"]:
        return compaction, [], []
    messages: list[Message] = []
    entry_ids: list[str] = []
    current: Entry | None = compaction
    for _ in steps:
        current = get(current.get("parentId"))  # type: ignore[union-attr]
        if current is None:
            return None, [], []
        entry_type = current.get("type")
        if entry_type == "message":
            message = current.get("message")
            if isinstance(message, dict):
                role = message.get("role")
                if found.model_entry is None and role == "assistant":
                    found.model_entry = current
                if role != "system":
                    messages.append(message if message.get("content") is not None else repaired_message(message))
                    entry_ids.append(current["id"])
        elif entry_type == "context_edit":
            return None
        elif entry_type != "compaction":
            found.setting(current, entry_type)
            if entry_type == "custom_message" or entry_type == "branch_summary":
                for message in reversed(project_entry(current)):
                    messages.append(message)
                    entry_ids.append(current["id"])
        if current["id"] == kept_id:
            messages.reverse()
            entry_ids.reverse()
            return current, messages, entry_ids
    return None


def _walk_to_settings(entry: Entry | None, get: Any, steps: Iterator[None], found: _Found) -> bool:
    """`context_at`'s walk on past `entry` until the model and the thinking level are known (or
    the root is reached); False when the steps run out first (a parentId cycle). Once only the
    thinking level is missing (often back to the root), one check per step."""
    current = entry
    if current is None:
        return True
    if not found.has_model():
        for _ in steps:
            current = get(current.get("parentId"))
            if current is None:
                return True
            entry_type = current.get("type")
            if entry_type == "message":
                found.assistant(current)
            else:
                found.setting(current, entry_type)
            if found.has_model():
                break
        else:
            return False
    if not found.has_thinking_level():
        for _ in steps:
            current = get(current.get("parentId"))
            if current is None:
                return True
            if current.get("type") == "thinking_level_change":
                found.setting(current, "thinking_level_change")
                if found.has_thinking_level():
                    return True
        return False
    return True


def context_from_path(path: list[Entry], leaf_id: str | None = None) -> SessionContext:
    """The context of a root-first path: its model and thinking level (the latest entries that set
    them) and its messages (`project_path`). One pass over the path while it has no context edit,
    where every entry projects on its own: a compaction restarts the messages with its own and
    those of its kept range (`_restart_at_compaction`). The general projection once an edit is
    seen (the same messages: tests/compaction/test_context_fast_path.py)."""
    ctx = SessionContext(leaf_id=leaf_id)
    messages, entry_ids = ctx.messages, ctx.entry_ids
    model_entry: Entry | None = None  # the latest entry that sets the model
    plain = True  # no context_edit seen (yet)
    for (index, entry), _ in zip(enumerate(path), step_budget(len(path))):
        entry_type = entry.get("type")
        if entry_type == "message":
            message = entry.get("message")
            if isinstance(message, dict):
                if message.get("role") == "assistant":
                    model_entry = entry
                if plain:
                    messages.append(message if message.get("content") is not None else repaired_message(message))
                    entry_ids.append(entry["id"])
        elif entry_type == "thinking_level_change":
            level = entry.get("thinkingLevel")
            if isinstance(level, str):
                ctx.thinking_level = level
        elif entry_type == "model_change":
            if _model_of(entry) is not None:
                model_entry = entry
        elif entry_type == "compaction":
            if plain:
                _restart_at_compaction(path, index, messages, entry_ids)
        elif entry_type == "context_edit":
            plain = False
        elif plain and (entry_type == "custom_message" or entry_type == "branch_summary"):
            for message in project_entry(entry):
                messages.append(message)
                entry_ids.append(entry["id"])
    if model_entry is not None:
        if model_entry.get("type") == "model_change":
            ctx.model = _model_of(model_entry)
        else:
            message = model_entry["message"]
            ctx.model = {"provider": message.get("provider"), "modelId": message.get("model")}
    if not plain:
        messages.clear()
        entry_ids.clear()
        for projected in project_path(path):
            for message in projected.messages:
                messages.append(message)
                entry_ids.append(projected.entry["id"])
    return ctx


def _restart_at_compaction(path: list[Entry], index: int, messages: list[Message], entry_ids: list[str]) -> None:
    """The messages of `context_entries(path[: index + 1])` without edits: the compaction's own,
    then those of its kept range (from its first kept entry, system messages left out, older
    compactions contributing nothing)."""
    compaction = path[index]
    messages.clear()
    entry_ids.clear()
    for message in leading_compaction_messages(compaction):
        messages.append(message)
        entry_ids.append(compaction["id"])
    first_kept = compaction.get("firstKeptEntryId")
    # From the start: a recent path begins at the latest compaction's first kept entry.
    start = next((i for i in range(index) if path[i].get("id") == first_kept), index)
    for entry in path[start:index]:
        if not is_system_message_entry(entry):
            for message in project_entry(entry):
                messages.append(message)
                entry_ids.append(entry["id"])


# --- convertToLlm (§4.2) ---------------------------------------------------------------------


def _text_of_blocks(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text"
        )
    return ""


def bash_execution_text(message: Message) -> str:
    """X-11: how a user `!command` is shown to the model."""
    text = f"Ran `{message.get('command', '')}`\n"
    output = message.get("output") or ""
    text += f"```\n{output}\n```" if output else "(no output)"
    exit_code = message.get("exitCode")
    if message.get("cancelled"):
        text += "\n\n(command cancelled)"
    elif isinstance(exit_code, (int, float)) and not isinstance(exit_code, bool) and exit_code != 0:
        text += f"\n\nCommand exited with code {int(exit_code) if float(exit_code).is_integer() else exit_code}"
    if message.get("truncated") and message.get("fullOutputPath"):
        text += f"\n\n[Output truncated. Full output: {message['fullOutputPath']}]"
    return text


def _user_text(text: str, timestamp: Any) -> Message:
    return {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": timestamp}


def compaction_summary_text(summary: Any) -> str:  # a file may hold any value
    return f"{COMPACTION_SUMMARY_LEAD}\n\n<summary>\n{summary}\n</summary>"


def branch_summary_text(summary: Any) -> str:
    # no newline before the closing tag.
    return f"{BRANCH_SUMMARY_LEAD}\n\n<summary>\n{summary}</summary>"


def convert_message(message: Message) -> Message | None:
    role = message.get("role")
    timestamp = message.get("timestamp")
    if role in ("user", "assistant", "developer", "system"):  # Q16-7: system passes through
        return message
    if role == "toolResult":
        if message.get("prunedAt") is not None:
            text = _text_of_blocks(message.get("content")) or PRUNED_OUTPUT_NOTICE
            return {**message, "content": [{"type": "text", "text": text}]}
        return message
    if role == "bashExecution":
        if message.get("excludeFromContext"):
            return None
        return _user_text(bash_execution_text(message), timestamp)
    if role in ("custom", "hookMessage"):
        content = message.get("content")
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        return {"role": "user", "content": content if content is not None else [], "timestamp": timestamp}
    if role == "compactionSummary":
        return _user_text(compaction_summary_text(message.get("summary", "")), timestamp)
    if role == "branchSummary":
        return _user_text(branch_summary_text(message.get("summary", "")), timestamp)
    return None  # unknown roles are dropped


def convert_to_llm(messages: list[Message]) -> list[Message]:
    out: list[Message] = []
    for message in messages:
        converted = convert_message(message)
        if converted is not None:
            out.append(converted)
    return out
