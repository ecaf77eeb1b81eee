"""Embedded extractive summarizer: no network, deterministic, the default backend.

It does not write prose; it *selects* evidence from the conversation (the convertToLlm messages
in `request.messages`) and files it under the exact headings of the structured formats:

- HISTORY (Q-2): Goal, Constraints & Preferences, Progress (Done / In Progress / Blocked),
  Key Decisions, Next Steps, Critical Context.
- BRANCH (Q-7): the same without Critical Context.
- TURN_PREFIX (Q-6): Original Request, Early Progress, Context for Suffix.

Evidence rules:
- user requests -> Goal (several allowed; short acknowledgements such as "ok" are skipped);
- user sentences with must / should / don't / never / always / prefer / avoid ... -> Constraints;
- tool calls whose result succeeded -> Done (`- [x] Edited <path>`, `- [x] Ran <command in backticks>`);
  read-only tools (read, grep, find, ls, ...) are not progress and are skipped;
- the latest assistant narration and tool calls without a result -> In Progress (`- [ ] ...`);
- failed tool results (isError, or unmistakable error text from commands) -> Blocked and Critical
  Context with the exact error line; an error is dropped once the same call later succeeds;
- assistant sentences that state a choice (decided, instead of, rather than, ...) -> Key Decisions;
- the last user request (and unresolved errors) -> Next Steps;
- file paths and function names the user or assistant mentioned -> Critical Context.
Paths, commands, function names and error lines are copied verbatim (long lines are clipped).

Update mode (`previous_summary`, or summaries embedded in the conversation as `<summary>` blocks):
previous items are kept and new ones appended (duplicates removed); previous In Progress items that
share a path or command with new Done items move to Done; Next Steps is refreshed when there is a
new request. File-operation tags in the previous text are ignored (code appends them).

Empty sections read `(none)`. The output is kept within `request.max_tokens` estimated as
ceil(UTF-16 chars / 4): the lowest-priority lines are dropped first (decisions, mentions, oldest
Done items, ...); headings are never dropped. The text is streamed to `on_text` one section at a
time. `custom_instructions` cannot steer an extractive summary and are ignored. Usage is None
(no model was called).

If `request.messages` is empty the serialized `<conversation>` inside `request.prompt` is parsed
instead (best effort), and `<previous-summary>` is taken from the prompt when not given.
"""

from __future__ import annotations

import asyncio
import json
import math
import re
from dataclasses import dataclass, field
from typing import Any
from collections.abc import Iterable

from ..compaction.prompts import BRANCH_SUMMARY_HEADINGS, SUMMARY_HEADINGS, TURN_PREFIX_HEADINGS
from .base import OnText, SummaryKind, SummaryRequest, SummaryResult

__all__ = [
    "ExtractiveSummarizer",
    "extract_summary",
    "HISTORY_HEADINGS",
    "BRANCH_HEADINGS",
    "TURN_PREFIX_HEADINGS",
]

# One definition of the required headings, shared with the prompts and the D-23 check.
HISTORY_HEADINGS = SUMMARY_HEADINGS
BRANCH_HEADINGS = BRANCH_SUMMARY_HEADINGS

NONE = "(none)"

# -- section keys, rendering markers and trimming priorities (lower = dropped first) ----------
GOAL, CONSTRAINTS, DONE, IN_PROGRESS, BLOCKED, DECISIONS, NEXT, CRITICAL = (
    "goal",
    "constraints",
    "done",
    "in_progress",
    "blocked",
    "decisions",
    "next",
    "critical",
)
REQUEST, EARLY, SUFFIX = "request", "early", "suffix"

_HEADING_KEYS = {
    "## Goal": GOAL,
    "## Constraints & Preferences": CONSTRAINTS,
    "### Done": DONE,
    "### In Progress": IN_PROGRESS,
    "### Blocked": BLOCKED,
    "## Key Decisions": DECISIONS,
    "## Next Steps": NEXT,
    "## Critical Context": CRITICAL,
    # Turn-prefix headings found in a previous (split-turn) summary fold into the main format.
    "## Original Request": GOAL,
    "## Early Progress": DONE,
    "## Context for Suffix": CRITICAL,
}

_CAPS = {
    GOAL: 8,
    CONSTRAINTS: 15,
    DONE: 40,
    IN_PROGRESS: 6,
    BLOCKED: 8,
    DECISIONS: 10,
    NEXT: 5,
    CRITICAL: 20,
    REQUEST: 1,
    EARLY: 30,
    SUFFIX: 15,
}
_PRIORITY = {
    DECISIONS: 1,
    DONE: 2,
    EARLY: 2,
    IN_PROGRESS: 3,
    CONSTRAINTS: 4,
    CRITICAL: 4,
    SUFFIX: 4,
    GOAL: 5,
    BLOCKED: 6,
    NEXT: 7,
    REQUEST: 8,
}

_MAX_ITEM = 400
_MAX_ERROR = 300
_MAX_REQUEST = 1200

_READ_ONLY_TOOLS = {
    "read",
    "grep",
    "find",
    "ls",
    "glob",
    "search",
    "rg",
    "list",
    "view",
    "cat",
    "web_search",
    "fetch",
    "webfetch",
    "todo_read",
    "todoread",
}
_ACK = re.compile(
    r"^(?:y|yes|yeah|yep|ok|okay|k|sure|thanks|thank you|thx|go|go ahead|continue|proceed|do it|please do|"
    r"sounds good|great|nice|cool|perfect|lgtm|next|done|no|nope)[.!]*$",
    re.IGNORECASE,
)
_CONSTRAINT = re.compile(
    r"\b(?:must|mustn't|should|shouldn't|don't|do not|never|always|prefer|preferably|avoid|make sure|"
    r"ensure|only use|required?|requirement|need to|needs to|has to|have to|"
    r"no more than|at most|at least|instead of)\b",
    re.IGNORECASE,
)
# Shell commands that only look at things: not progress, and their "failures" (grep: no match) are noise.
_READ_ONLY_COMMANDS = {
    "grep",
    "rg",
    "ag",
    "ls",
    "cat",
    "head",
    "tail",
    "find",
    "fd",
    "wc",
    "echo",
    "pwd",
    "which",
    "tree",
    "stat",
    "file",
    "less",
    "more",
    "du",
    "df",
    "env",
    "printenv",
    "type",
    "sed",
    "awk",
    "jq",
    "diff",
    "nl",
    "sort",
    "uniq",
    "cut",
}
_READ_ONLY_GIT = {"status", "log", "diff", "show", "branch", "blame", "grep", "ls-files", "rev-parse"}


def _is_read_only_command(command: str) -> bool:
    unquoted = re.sub(r"'[^']*'|\"(?:[^\"\\]|\\.)*\"", "''", command)  # a quoted `|` is not a pipe
    segments = [seg.strip() for seg in re.split(r"&&|\|\||;|\||\n", unquoted) if seg.strip()]
    words = [seg.split() for seg in segments]
    words = [w for w in words if w and w[0] != "cd"]
    if not words:
        return True
    for w in words:
        if w[0] == "git" and len(w) > 1 and w[1] in _READ_ONLY_GIT:
            continue
        if w[0] == "sed" and "-i" in w:
            return False
        if w[0] not in _READ_ONLY_COMMANDS:
            return False
    return True


_DECISION = re.compile(
    r"\b(?:decided|decide to|decision|instead of|rather than|chose|choose|chosen|going with|go with|"
    r"opted|switch(?:ed)? to|will use|I'll use|we'll use|settled on|approach is|plan is)\b",
    re.IGNORECASE,
)
_TYPED_ERROR = re.compile(
    r"(?:^|\s)(?:[A-Z]\w*(?:Error|Exception)|error(?:\[\w+\])?|error TS\d+|fatal|FAIL(?:ED)?|panic)\b\s*:"
    r"|npm ERR!|command not found|No such file or directory",
)
_GENERIC_ERROR = re.compile(
    r"error|exception|failed|failure|fatal|not found|denied|cannot|can't|invalid|undefined|refused|"
    r"timed out|exited with code [1-9]",
    re.IGNORECASE,
)
_EXIT_LINE = re.compile(r"^Command exited with code \d+$")
_PATH = re.compile(
    r"(?<![\w@:/])(?:\.{0,2}/)?(?:[\w.@-]+/)+[\w.@-]*\w"
    r"|\b[\w-]+\.(?:py|pyi|ts|tsx|js|jsx|mjs|cjs|json|jsonl|md|go|rs|java|kt|c|h|cc|cpp|hpp|cs|rb|php|"
    r"swift|toml|yaml|yml|ini|cfg|sh|bash|zsh|txt|css|scss|html|sql|proto|lock|xml|vue|svelte)\b"
)
_FUNC = re.compile(r"\b[A-Za-z_][\w]*(?:\.[A-Za-z_]\w*)*\(\)")
_CODE = re.compile(r"`([^`\n]{2,80})`")
_SUMMARY_BLOCK = re.compile(r"<summary>\n?(.*?)\n?</summary>", re.DOTALL)
_FILE_TAGS = re.compile(r"<(read-files|modified-files)>.*?</\1>", re.DOTALL)
_BASH_USER = re.compile(r"^Ran `(?P<cmd>[^\n]*)`\n(?P<rest>.*)$", re.DOTALL)
_LIST_MARK = re.compile(r"^\s*(?:[-*+]\s+(?:\[[ xX]\]\s+)?|\d+[.)]\s+)")


def _u16(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def _clip(text: str, limit: int = _MAX_ITEM) -> str:
    text = " ".join(text.split()) if "\n" in text else text.strip()
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _norm(text: str) -> str:
    return re.sub(r"\W+", " ", text.lower()).strip()


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text")
    return ""


def _sentences(text: str) -> list[str]:
    out = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("```"):
            continue
        out.extend(s.strip() for s in re.split(r"(?<=[.!?])\s+(?=[A-Z`\"'(\[])", line) if s.strip())
    return out


def _first_line(text: str) -> str:
    for line in text.splitlines():
        if line.strip():
            return line.strip()
    return ""


def _error_line(text: str) -> str:
    """The most telling line of an error output, verbatim (minified/huge lines avoided)."""
    all_lines = [ln.strip() for ln in text.splitlines() if ln.strip() and not _EXIT_LINE.match(ln.strip())]
    lines = [ln for ln in all_lines if len(ln) <= 300] or all_lines
    typed = [ln for ln in lines if _TYPED_ERROR.search(ln)]
    if typed:
        # Python tracebacks end with the real exception; compilers report the first error first.
        return typed[-1] if "Traceback (most recent call last)" in text else typed[0]
    for ln in lines:
        if _GENERIC_ERROR.search(ln):
            return ln
    if lines:
        return lines[0]
    return _first_line(text) or "(no output)"


def _looks_failed(text: str) -> bool:
    """Unmistakable failure text in a result that was not flagged isError (commands only)."""
    head = text[:4000]
    return bool(
        re.search(r"Command exited with code [1-9]\d*\s*$", text.strip())
        or re.search(r"^(?:error|fatal)(?:\[\w+\])?:", head, re.IGNORECASE | re.MULTILINE)
        or "Traceback (most recent call last)" in head
        or re.search(r"command not found|npm ERR!", head)
    )


@dataclass
class _Call:
    name: str
    args: dict[str, Any]
    seq: int

    @property
    def key(self) -> tuple[str, str]:
        return (
            self.name,
            str(self.args.get("path") or self.args.get("command") or self.args.get("file_path") or ""),
        )

    def short(self) -> str:
        """How the call is named inside a sentence: the command, or the tool and its path."""
        a = self.args
        if "command" in a:
            return f"`{_clip(str(a['command']), 300)}`"
        path = a.get("path") or a.get("file_path") or a.get("file")
        return f"{self.name} {path}" if path else self.name

    def describe(self) -> str:
        a, n = self.args, self.name
        path = a.get("path") or a.get("file_path") or a.get("file")
        if n == "bash" or (n in ("shell", "exec", "run", "terminal") and "command" in a):
            return f"Ran `{_clip(str(a.get('command', '')), 300)}`"
        if n in ("edit", "multi_edit", "multiedit", "str_replace") and path:
            return f"Edited {path}"
        if n in ("write", "create") and path:
            return f"Wrote {path}"
        if path:
            return f"{n} {path}"
        shown = ", ".join(
            f"{k}={_clip(json.dumps(v, ensure_ascii=False), 60)}" for k, v in list(a.items())[:2]
        )
        return f"{n}({shown})"


@dataclass
class _Evidence:
    requests: list[str] = field(default_factory=list)  # full user request texts, in order
    constraints: list[str] = field(default_factory=list)
    done: list[str] = field(default_factory=list)
    errors: list[tuple[str, str]] = field(
        default_factory=list
    )  # (call.short(), exact error line), unresolved
    pending: list[str] = field(default_factory=list)
    narration: list[str] = field(default_factory=list)  # assistant text blocks, in order
    decisions: list[str] = field(default_factory=list)
    mentions: list[str] = field(default_factory=list)
    embedded: list[str] = field(default_factory=list)  # <summary> bodies found in the conversation
    modified: list[str] = field(default_factory=list)


def _dedupe(items: Iterable[str]) -> list[str]:
    seen: set[str] = set()
    out = []
    for it in items:
        k = _norm(it)
        if it and k not in seen:
            seen.add(k)
            out.append(it)
    return out


def _collect(messages: list[dict[str, Any]]) -> _Evidence:
    ev = _Evidence()
    calls: dict[str, _Call] = {}
    pending: dict[str, _Call] = {}
    failures: list[tuple[_Call, str]] = []
    successes: list[_Call] = []
    done_counts: dict[str, int] = {}
    seq = 0
    last_assistant_seq = -1

    def read_only(call: _Call) -> bool:
        if call.name in _READ_ONLY_TOOLS:
            return True
        return call.name == "bash" and _is_read_only_command(str(call.args.get("command", "")))

    def record_success(call: _Call) -> None:
        successes.append(call)
        if read_only(call):
            return
        desc = call.describe()
        if desc not in done_counts:
            ev.done.append(desc)
        done_counts[desc] = done_counts.get(desc, 0) + 1
        path = call.args.get("path")
        if call.name in ("edit", "write") and isinstance(path, str) and path and path not in ev.modified:
            ev.modified.append(path)

    for msg in messages:
        if not isinstance(msg, dict):
            continue
        seq += 1
        role = msg.get("role")
        if role == "user":
            text = _text_of(msg.get("content"))
            blocks = _SUMMARY_BLOCK.findall(text)
            if blocks:
                ev.embedded.extend(blocks)
                continue
            bash = _BASH_USER.match(text)
            if bash:
                call = _Call("bash", {"command": bash.group("cmd")}, seq)
                rest = bash.group("rest")
                if "(command cancelled)" in rest:
                    continue
                if re.search(r"Command exited with code [1-9]", rest):
                    failures.append((call, _error_line(rest)))
                else:
                    record_success(call)
                continue
            if not text.strip():
                continue
            ev.requests.append(text.strip())
            ev.constraints.extend(
                _LIST_MARK.sub("", s)
                for s in _sentences(text)
                if _CONSTRAINT.search(s) and not s.endswith("?") and len(s) <= 300
            )
            ev.mentions.extend(_PATH.findall(text) + _FUNC.findall(text) + _CODE.findall(text))
        elif role == "assistant":
            last_assistant_seq = seq
            content = msg.get("content")
            for block in content if isinstance(content, list) else []:
                if not isinstance(block, dict):
                    continue
                if block.get("type") == "text" and block.get("text", "").strip():
                    ev.narration.append(block["text"].strip())
                    ev.decisions.extend(s for s in _sentences(block["text"]) if _DECISION.search(s))
                    ev.mentions.extend(_FUNC.findall(block["text"]))
                elif block.get("type") == "toolCall":
                    args = block.get("arguments") if isinstance(block.get("arguments"), dict) else {}
                    call = _Call(str(block.get("name", "tool")), args, seq)
                    cid = str(block.get("id", f"call{seq}"))
                    calls[cid] = call
                    pending[cid] = call
        elif role == "toolResult":
            cid = str(msg.get("toolCallId", ""))
            call = calls.get(cid) or _Call(str(msg.get("toolName", "tool")), {}, seq)
            pending.pop(cid, None)
            text = _text_of(msg.get("content"))
            command_like = call.name not in _READ_ONLY_TOOLS and call.name not in ("edit", "write")
            if msg.get("isError") or (command_like and _looks_failed(text)):
                failures.append((call, _error_line(text)))
            else:
                record_success(call)

    ev.done = [f"{d} (×{done_counts[d]})" if done_counts.get(d, 1) > 1 else d for d in ev.done]
    # An error is resolved when the same call (tool + path/command) succeeded afterwards.
    for call, line in failures:
        if read_only(call):
            continue
        if not any(s.key == call.key and s.seq > call.seq for s in successes):
            ev.errors.append((call.short(), line))
    # Only the newest assistant message can still be waiting for results; older calls without a
    # result belong to aborted runs.
    ev.pending = [f"{c.describe()} (no result yet)" for c in pending.values() if c.seq == last_assistant_seq]
    ev.constraints = _dedupe(_clip(s) for s in ev.constraints)
    ev.decisions = _dedupe(_clip(s) for s in ev.decisions)
    ev.mentions = _dedupe(ev.mentions)
    return ev


# -- parsing previous summaries ---------------------------------------------------------------
def _parse_summary(text: str) -> dict[str, list[str]]:
    text = _FILE_TAGS.sub("", text)
    sections: dict[str, list[str]] = {}
    current: str | None = None
    for raw in text.splitlines():
        line = raw.rstrip()
        stripped = line.strip()
        if stripped in _HEADING_KEYS:
            current = _HEADING_KEYS[stripped]
            continue
        if stripped.startswith("#") or stripped in ("---", "**Turn Context (split turn):**"):
            current = None  # "## Progress" itself, unknown sections, split-turn separators
            continue
        if current is None or not stripped:
            continue
        item = _LIST_MARK.sub("", stripped).strip()
        if not item or item == NONE:
            continue
        sections.setdefault(current, []).append(item)
    return sections


def _tokens(text: str) -> set[str]:
    """Paths and backticked code in a line, used to match work items across summaries."""
    found = set(_PATH.findall(text)) | set(re.findall(r"`([^`]+)`", text))
    return {t for t in found if len(t) > 2}


# -- assembling and trimming ------------------------------------------------------------------
@dataclass
class _Line:
    section: str
    text: str
    priority: int
    order: int


_FILES_CHANGED = "Files changed: "
_MENTIONED = "Mentioned: "


def _goal(request: str) -> str:
    """A request's aim: its leading non-constraint sentences (constraints are listed separately)."""
    sentences = _sentences(request)
    picked: list[str] = []
    for s in sentences:
        if _CONSTRAINT.search(s) and picked:
            continue
        picked.append(s)
        if sum(len(p) for p in picked) >= 40:
            break
    if picked and _CONSTRAINT.search(picked[0]) and len(picked) > 1:
        picked = picked[1:] if not _CONSTRAINT.search(picked[1]) else picked
    return _clip(" ".join(picked) if picked else _first_line(request), 300)


def _decision_line(sentence: str) -> str:
    m = re.match(r"(.+?)\s+(because|since|so that|as)\s+(.+)", sentence)
    if m and len(m.group(1)) > 8:
        return f"**{m.group(1).rstrip(',;:')}**: {m.group(2)} {m.group(3)}"
    return f"**{sentence}**"


def _render(kind: SummaryKind, lines: list[_Line]) -> str:
    by: dict[str, list[str]] = {}
    for ln in lines:
        by.setdefault(ln.section, []).append(ln.text)

    def bullets(key: str, mark: str = "- ") -> str:
        items = by.get(key, [])
        return "\n".join(mark + it for it in items) if items else NONE

    if kind == SummaryKind.TURN_PREFIX:
        parts = [
            "## Original Request\n" + ("\n".join(by.get(REQUEST, [])) or NONE),
            "## Early Progress\n" + bullets(EARLY),
            "## Context for Suffix\n" + bullets(SUFFIX),
        ]
        return "\n\n".join(parts)

    goals = by.get(GOAL, [])
    goal = NONE if not goals else goals[0] if len(goals) == 1 else "\n".join("- " + g for g in goals)
    nexts = by.get(NEXT, [])
    parts = [
        "## Goal\n" + goal,
        "## Constraints & Preferences\n" + bullets(CONSTRAINTS),
        "## Progress\n### Done\n" + bullets(DONE, "- [x] "),
        "### In Progress\n" + bullets(IN_PROGRESS, "- [ ] "),
        "### Blocked\n" + bullets(BLOCKED),
        "## Key Decisions\n" + bullets(DECISIONS),
        "## Next Steps\n" + ("\n".join(f"{i}. {t}" for i, t in enumerate(nexts, 1)) or NONE),
    ]
    if kind == SummaryKind.HISTORY:
        parts.append("## Critical Context\n" + bullets(CRITICAL))
    return "\n\n".join(parts)


def _fit(kind: SummaryKind, lines: list[_Line], max_tokens: int) -> str:
    """Drop lowest-priority (then oldest) lines until ceil(chars/4) <= max_tokens."""
    text = _render(kind, lines)
    if max_tokens <= 0 or math.ceil(_u16(text) / 4) <= max_tokens:
        return text
    victims = sorted(lines, key=lambda ln: (ln.priority, ln.order))
    keep = list(lines)
    for victim in victims:
        keep.remove(victim)
        text = _render(kind, keep)
        if math.ceil(_u16(text) / 4) <= max_tokens:
            return text
    return text  # headings only: never dropped


def _build_lines(kind: SummaryKind, ev: _Evidence, previous: list[dict[str, list[str]]]) -> list[_Line]:
    lines: list[_Line] = []
    counter = 0

    def add(section: str, items: Iterable[str], priority: int | None = None) -> None:
        nonlocal counter
        for it in items:
            counter += 1
            lines.append(_Line(section, it, _PRIORITY[section] if priority is None else priority, counter))

    def capped(section: str, items: list[str]) -> list[str]:
        items = _dedupe(items)
        cap = _CAPS[section]
        return items[-cap:] if len(items) > cap else items

    requests = [r for r in ev.requests if not _ACK.match(r.strip()) and len(r.split()) >= 2]
    goals_new = [_goal(r) for r in requests]
    last_request = requests[-1] if requests else None
    errors = [f"{what} failed: {_clip(line, _MAX_ERROR)}" for what, line in ev.errors]
    narr_last = None
    for block in reversed(ev.narration):  # newest narration that says something
        first = next(iter(_sentences(block)), "")
        if len(re.findall(r"[^\W\d_]{2,}", first)) >= 2:
            narr_last = _clip(first, 300)
            break

    if kind == SummaryKind.TURN_PREFIX:
        first = ev.requests[0] if ev.requests else None
        add(REQUEST, [_clip(first, _MAX_REQUEST)] if first else [])
        add(EARLY, capped(EARLY, [*ev.done, *errors]))
        suffix = [*([narr_last] if narr_last else []), *ev.pending]
        if ev.modified:
            suffix.append("Files changed so far: " + ", ".join(ev.modified))
        suffix += [f"Error from {what}: {_clip(line, _MAX_ERROR)}" for what, line in ev.errors]
        if ev.constraints:
            suffix += [f"Constraint: {c}" for c in ev.constraints]
        add(SUFFIX, capped(SUFFIX, suffix))
        return lines

    prev: dict[str, list[str]] = {}
    for p in previous:
        for k, v in p.items():
            prev.setdefault(k, []).extend(v)

    done_new = list(ev.done)
    new_tokens = set().union(*(_tokens(d) for d in done_new)) if done_new else set()
    prev_in_progress, moved = [], []
    for it in prev.get(IN_PROGRESS, []):
        (moved if _tokens(it) & new_tokens else prev_in_progress).append(it)
    prev_blocked = [b for b in prev.get(BLOCKED, []) if not (_tokens(b) & new_tokens)]

    goals = _dedupe([*prev.get(GOAL, []), *goals_new])
    if len(goals) > _CAPS[GOAL]:  # the original aims and the newest requests matter most
        goals = goals[:2] + goals[-(_CAPS[GOAL] - 2) :]
    add(GOAL, goals)
    add(CONSTRAINTS, capped(CONSTRAINTS, [*prev.get(CONSTRAINTS, []), *ev.constraints]))
    add(DONE, capped(DONE, [*prev.get(DONE, []), *moved, *done_new]))
    in_progress = [*ev.pending, *([narr_last] if narr_last else [])]
    add(IN_PROGRESS, capped(IN_PROGRESS, [*prev_in_progress, *in_progress]))
    add(BLOCKED, capped(BLOCKED, [*prev_blocked, *errors]))
    add(DECISIONS, capped(DECISIONS, [*prev.get(DECISIONS, []), *(_decision_line(d) for d in ev.decisions)]))
    nexts: list[str] = []
    if last_request:
        nexts.append(_goal(last_request))
    nexts += [f"Resolve: {_clip(line, _MAX_ERROR)}" for _, line in ev.errors[-2:]]
    add(NEXT, capped(NEXT, nexts if nexts else prev.get(NEXT, [])))
    if kind == SummaryKind.HISTORY:
        # "Files changed:" and "Mentioned:" lines of earlier summaries merge into the new ones.
        critical, modified, mentions = [], [], []
        for item in prev.get(CRITICAL, []):
            if item.startswith(_FILES_CHANGED):
                modified += item[len(_FILES_CHANGED) :].split(", ")
            elif item.startswith(_MENTIONED):
                mentions += item[len(_MENTIONED) :].split(", ")
            else:
                critical.append(item)
        critical += [f"Error from {what}: {_clip(line, _MAX_ERROR)}" for what, line in ev.errors]
        modified = _dedupe([*modified, *ev.modified])
        if modified:
            critical.append(_FILES_CHANGED + ", ".join(modified))
        add(CRITICAL, capped(CRITICAL, critical))
        mentions = _dedupe([*mentions, *(_clip(m, 120) for m in ev.mentions)])
        if mentions:  # least important: the first thing to go when the budget is tight
            add(CRITICAL, [_MENTIONED + ", ".join(mentions[-25:])], priority=0)
    return lines


# -- fallback: parse the serialized conversation out of the prompt ----------------------------
_PART = re.compile(
    r"^\[(User|Assistant|Assistant thinking|Assistant tool calls|Tool result|Developer)\]: ", re.M
)
_CALL = re.compile(r"(?:^|; )([\w.-]+)\(")
_ARG = re.compile(r'(\w+)=("(?:[^"\\]|\\.)*"|[^,)]*)')


def _messages_from_prompt(prompt: str) -> list[dict[str, Any]]:
    m = re.search(r"<conversation>\n(.*?)\n</conversation>", prompt, re.DOTALL)
    if not m:
        return []
    body = m.group(1)
    heads = list(_PART.finditer(body))
    messages: list[dict[str, Any]] = []
    queue: list[str] = []
    n = 0
    for i, h in enumerate(heads):
        text = body[h.end() : heads[i + 1].start() if i + 1 < len(heads) else len(body)].rstrip("\n")
        label = h.group(1)
        if label == "User":
            messages.append({"role": "user", "content": text})
        elif label == "Assistant":
            messages.append({"role": "assistant", "content": [{"type": "text", "text": text}]})
        elif label == "Assistant tool calls":
            blocks = []
            for cm in _CALL.finditer(text):
                args: dict[str, Any] = {}
                tail = text[cm.end() :]
                for am in _ARG.finditer(tail.split("); ")[0]):
                    try:
                        args[am.group(1)] = json.loads(am.group(2))
                    except ValueError:
                        args[am.group(1)] = am.group(2)
                n += 1
                blocks.append({"type": "toolCall", "id": f"p{n}", "name": cm.group(1), "arguments": args})
                queue.append(f"p{n}")
            messages.append({"role": "assistant", "content": blocks})
        elif label == "Tool result":
            cid = queue.pop(0) if queue else f"orphan{i}"
            messages.append(
                {
                    "role": "toolResult",
                    "toolCallId": cid,
                    "content": [{"type": "text", "text": text}],
                    "isError": _looks_failed(text),
                }
            )
    return messages


def extract_summary(request: SummaryRequest) -> str:
    """The complete extractive summary for a request (pure, deterministic)."""
    messages = request.messages or _messages_from_prompt(request.prompt)
    previous_text = request.previous_summary
    if previous_text is None:
        pm = re.search(r"<previous-summary>\n(.*?)\n</previous-summary>", request.prompt, re.DOTALL)
        previous_text = pm.group(1) if pm else None
    ev = _collect(messages)
    previous = [_parse_summary(t) for t in ev.embedded]
    if previous_text and request.kind != SummaryKind.TURN_PREFIX:
        previous.append(_parse_summary(previous_text))
    lines = _build_lines(request.kind, ev, previous)
    return _fit(request.kind, lines, request.max_tokens)


class ExtractiveSummarizer:
    name = "extractive"

    def __repr__(self) -> str:
        return "ExtractiveSummarizer()"

    async def summarize(self, request: SummaryRequest, on_text: OnText | None = None) -> SummaryResult:
        text = extract_summary(request)
        if on_text is not None:
            # One chunk per top-level section; yield between chunks so cancellation can land.
            pieces = re.split(r"(?=\n\n## )", text)
            for piece in pieces:
                on_text(piece)
                await asyncio.sleep(0)
        else:
            await asyncio.sleep(0)
        return SummaryResult(text=text, usage=None)
