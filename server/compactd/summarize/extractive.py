"""Embedded extractive summarizer: no network, deterministic, the default backend.

It does not write prose; it *selects* evidence (summarize.evidence) from the conversation — the
convertToLlm messages in `request.messages` — and files it under the exact headings of the
structured formats:

- HISTORY (Q-2): Goal, Constraints & Preferences, Progress (Done / In Progress / Blocked),
  Key Decisions, Next Steps, Critical Context.
- BRANCH (Q-7): the same without Critical Context.
- TURN_PREFIX (Q-6): Original Request, Early Progress, Context for Suffix.

What goes where:
- Goal: the user's task requests (pasted material, acknowledgements, questions asked in passing,
  corrections and interruptions are not goals), earlier goals first;
- Constraints: the user's rules (must / never / don't / only / keep ...), earlier ones kept;
- Done: edits and writes, commits with their messages, renames and deletions (`Renamed a → b`,
  `Deleted c`), errors that a later run resolved (`Fixed: <exact error>`), checks that pass, other
  commands that changed something; read-only commands and interruptions are not progress;
- In Progress: the open task when the conversation stops mid-work, the user's last correction
  of it, uncommitted changes, calls still waiting for a result;
- Blocked: errors nothing resolved later, verbatim;
- Key Decisions: the assistant's stated choices, the ones the user rejected marked as rejected,
  the user's corrections and directions quoted word for word, the approach adopted after them;
- Next Steps: from the last open work — finish the open task, re-run the check that last ran
  before the latest edits, commit uncommitted changes, fix open errors; when the conversation
  ended with an answer, the next steps it offered; else the earlier ones;
- Critical Context: error lines the user quoted, open errors, files changed (current names,
  deleted files left out), renames and deletions, then names mentioned (dropped first).

Update mode (`previous_summary`, or summaries embedded in the conversation as `<summary>` blocks):
every section of the previous summary is carried forward and merged — also from summaries in
other layouts (Pi's own: "User Preferences", "Completed Work", "Remaining Work", ...), whose
headings are mapped by keyword; sections with no counterpart go to Critical Context under their
own title. Previous In Progress items that share a path or command with new work move to Done
(all of them when the user has moved on to new tasks); a new open step replaces Next Steps.
File-operation tags in the previous text are ignored (code appends them).

Empty sections read `(none)`. The output is kept within `request.max_tokens` estimated as
ceil(UTF-16 chars / 4): the lowest-priority lines are dropped first (names mentioned, decisions,
oldest Done items, ...); headings are never dropped. The text is streamed to `on_text` one
section at a time. `custom_instructions` cannot steer an extractive summary and are ignored.
Usage is None (no model was called).

If `request.messages` is empty the serialized `<conversation>` inside `request.prompt` is parsed
instead (best effort), and `<previous-summary>` is taken from the prompt when not given.
"""

from __future__ import annotations

import asyncio
import json
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ..compaction.prompts import BRANCH_SUMMARY_HEADINGS, SUMMARY_HEADINGS, TURN_PREFIX_HEADINGS
from .base import OnText, SummaryKind, SummaryRequest, SummaryResult
from .evidence import CONSTRAINT_RE, TYPED_ERROR_RE, Evidence, clip, collect, dedupe, looks_failed, norm, sentences

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

_CAPS = {
    GOAL: 6,
    CONSTRAINTS: 15,
    DONE: 60,
    IN_PROGRESS: 6,
    BLOCKED: 6,
    DECISIONS: 14,
    NEXT: 6,
    CRITICAL: 24,
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

_MAX_ERROR = 300
_MAX_REQUEST = 1200
_FILES_CHANGED = "Files changed: "
_FILES_RENAMED = "Files renamed: "
_FILES_DELETED = "Files deleted: "
_MENTIONED = "Mentioned: "
_USER_ERROR = "Error reported by the user: "
_FILE_TAGS = re.compile(r"<(read-files|modified-files)>.*?</\1>", re.DOTALL)
_LIST_MARK = re.compile(r"^\s*(?:[-*+]\s+(?:\[[ xX]\]\s+)?|\d+[.)]\s+)")
_PATH = re.compile(
    r"(?<![\w@:/])(?:\.{0,2}/)?(?:[\w.@-]+/)+[\w.@-]*\w"
    r"|\b[\w-]+\.(?:py|pyi|ts|tsx|js|jsx|mjs|cjs|json|jsonl|md|go|rs|java|kt|c|h|cc|cpp|hpp|cs|rb|php|"
    r"swift|toml|yaml|yml|ini|cfg|sh|bash|zsh|txt|css|scss|html|sql|proto|lock|xml|vue|svelte)\b"
)


def _u16(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def _tokens(text: str) -> set[str]:
    """Paths and backticked code in a line, used to match work items across summaries."""
    found = set(_PATH.findall(text)) | set(re.findall(r"`([^`]+)`", text))
    return {t for t in found if len(t) > 2}


# -- parsing previous summaries ---------------------------------------------------------------
# Heading keywords -> section, first match wins. Our own headings and Pi's, whatever the layout.
_HEADING_MAP: tuple[tuple[str, str | None], ...] = (
    ("turn context", None),
    ("original request", GOAL),
    ("early progress", DONE),
    ("context for suffix", CRITICAL),
    ("constraint", CONSTRAINTS),
    ("preference", CONSTRAINTS),
    ("rule", CONSTRAINTS),
    ("requirement", CONSTRAINTS),
    ("blocked", BLOCKED),
    ("blocker", BLOCKED),
    ("in progress", IN_PROGRESS),
    ("current", IN_PROGRESS),
    ("decision", DECISIONS),
    ("agreed", DECISIONS),
    ("pattern", DECISIONS),
    ("architecture", DECISIONS),
    ("next", NEXT),
    ("remaining", NEXT),
    ("todo", NEXT),
    ("to do", NEXT),
    ("done", DONE),
    ("completed", DONE),
    ("finished", DONE),
    ("progress made", DONE),
    ("work", DONE),
    ("release", DONE),
    ("committed", DONE),
    ("goal", GOAL),
    ("objective", GOAL),
    ("overview", GOAL),
    ("critical", CRITICAL),
    ("context", CRITICAL),
)


def _heading_key(title: str) -> str | None | bool:
    """A section key, None for "skip this heading's text", False for "no counterpart"."""
    t = title.lower()
    if t.strip() == "progress":
        return None  # "## Progress" only groups Done / In Progress / Blocked
    for word, key in _HEADING_MAP:
        if word in t:
            return key
    return False


def _parse_summary(text: str) -> dict[str, list[str]]:
    text = _FILE_TAGS.sub("", text)
    sections: dict[str, list[str]] = {}
    current: str | None = None
    prefix = ""
    level_of_current = 0
    fence: list[str] | None = None
    for raw in text.splitlines():
        stripped = raw.strip()
        if stripped.startswith("```"):
            if fence is None:
                fence = []
            else:
                if current is not None and fence:
                    sections.setdefault(current, []).append(prefix + clip(" / ".join(fence), 400))
                fence = None
            continue
        if fence is not None:
            if stripped:
                fence.append(stripped)
            continue
        m = re.match(r"^(#{1,6})\s+(.*?)\s*$", stripped)
        if m:
            level, title = len(m.group(1)), m.group(2).strip("*: ")
            if level == 1:
                current, prefix = None, ""
                continue
            key = _heading_key(title)
            if key is False:
                if current is not None and level > level_of_current:
                    sections.setdefault(current, []).append(prefix + title)  # a sub-heading of a known section
                    continue
                current, prefix, level_of_current = CRITICAL, f"{title}: ", level
            else:
                current, prefix, level_of_current = key, "", level  # type: ignore[assignment]
            continue
        if stripped in ("---", "**Turn Context (split turn):**"):
            current = None
            continue
        if current is None or not stripped or re.match(r"^\|?\s*:?-{3,}", stripped):
            continue
        item = _LIST_MARK.sub("", stripped).strip()
        if item.startswith("|"):
            item = " | ".join(c.strip() for c in item.strip("|").split("|"))
        if not item or item in (NONE, "- (none)"):
            continue
        sections.setdefault(current, []).append(prefix + item)
    return sections


# -- assembling and trimming ------------------------------------------------------------------
@dataclass
class _Line:
    section: str
    text: str
    priority: int
    order: int


def _goal(request: str, limit: int = 400) -> str:
    """A request's aim: its leading sentences (later rules are listed as constraints), at most
    `limit` characters; fragments of a few words only lead when nothing else does."""
    picked: list[str] = []
    for s in sentences(request):
        s = _LIST_MARK.sub("", s).strip()
        if picked and (CONSTRAINT_RE.search(s) or len(s.split()) < 4):
            continue
        if sum(len(p) + 1 for p in picked) + len(s) > limit and picked:
            break
        picked.append(s)
        if sum(len(p) for p in picked) >= 200:
            break
    text = " ".join(picked) if picked else request.strip()
    return clip(text, limit)


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


def _trim_done(items: list[tuple[str, str]], cap: int) -> list[str]:
    """Keep `cap` Done items: plain commands go first, then other tools, then the oldest items."""
    kept = list(items)
    for kind in ("command", "other"):
        while len(kept) > cap:
            idx = next((i for i, (k, _) in enumerate(kept) if k == kind), None)
            if idx is None:
                break
            kept.pop(idx)
    return [t for _, t in kept[-cap:]]


def _decisions(ev: Evidence) -> list[tuple[str, str]]:
    out = []
    for d in ev.decisions:
        text = clip(d.text, 500)
        if d.kind == "rejected":
            out.append(("rejected", f"**Rejected by the user**: {text}"))
        elif d.kind == "user":
            out.append(("user", f"**User**: {text}"))
        elif d.kind == "adopted":
            out.append(("adopted", f"**Adopted instead**: {text}"))
        else:
            out.append(("assistant", _decision_line(text)))
    return out


def _offered_steps(final_text: str) -> list[str]:
    """Next steps an answer offers: items of a list introduced by "next", or closing offers."""
    steps: list[str] = []
    in_next = False
    for line in final_text.splitlines():
        s = line.strip()
        if not s:
            continue
        if re.search(r"\bnext\b[^.]*:\s*\**$|^#+\s.*\bnext\b", s, re.I):
            in_next = True
            continue
        if in_next and _LIST_MARK.match(s):
            steps.append(clip(_LIST_MARK.sub("", s), 200))
        elif in_next:
            in_next = False
    for s in sentences(final_text)[-4:]:
        if re.search(r"\b(?:want me to|should I|shall I|would you like me to|do you want me to)\b", s, re.I):
            steps.append(clip("Offered: " + s, 300))
        elif re.match(r"^next(?: is| up| step)?\b", s, re.I):
            steps.append(clip(s, 300))
    return steps


def _build_lines(kind: SummaryKind, ev: Evidence, previous: list[dict[str, list[str]]]) -> list[_Line]:
    lines: list[_Line] = []
    counter = 0

    def add(section: str, items: Iterable[str], priority: int | None = None) -> None:
        nonlocal counter
        for it in items:
            counter += 1
            lines.append(_Line(section, it, _PRIORITY[section] if priority is None else priority, counter))

    def capped(section: str, items: list[str]) -> list[str]:
        items = dedupe(items)
        cap = _CAPS[section]
        return items[-cap:] if len(items) > cap else items

    errors = [f"{f.call.short()} failed: {clip(f.line, _MAX_ERROR)}" for f in ev.errors]
    # Errors a later run resolved, when they say something (a typed error of a command).
    fixed = [f"Fixed: {clip(f.line, _MAX_ERROR)} (from `{clip(f.call.command, 100)}`)" for f in ev.fixed
             if f.call.command and TYPED_ERROR_RE.search(f.line)][-6:]
    done_new: list[tuple[str, str]] = [(k, t) for _, k, t in ev.done]
    last_task = ev.tasks[-1][1] if ev.tasks else None  # the newest task is the open work
    # Open work: the conversation stops in the middle of tool calls, or on a request not yet answered.
    unanswered = ev.last_user_seq > ev.last_assistant_seq
    open_work = ev.ends_mid_work or bool(ev.pending) or unanswered
    last_correction = ev.corrections[-1] if ev.corrections else None
    correction_is_latest = bool(last_correction and (not ev.tasks or last_correction[0] > ev.tasks[-1][0]))

    if kind == SummaryKind.TURN_PREFIX:
        # The turn's request, word for word (it is the first user message of the prefix).
        add(REQUEST, [clip(ev.first_user_raw, _MAX_REQUEST)] if ev.first_user_raw else [])
        add(EARLY, capped(EARLY, [*[t for _, t in done_new], *fixed, *errors]))
        suffix = []
        narr = _last_narration(ev)
        if narr:
            suffix.append(narr)
        suffix += ev.pending
        if ev.modified:
            suffix.append("Files changed so far: " + ", ".join(ev.modified))
        if ev.read:
            suffix.append("Files read so far: " + ", ".join(ev.read[-10:]))
        suffix += [f"Error from {f.call.short()}: {clip(f.line, _MAX_ERROR)}" for f in ev.errors]
        suffix += [f"Constraint: {c}" for c in ev.constraints]
        add(SUFFIX, capped(SUFFIX, suffix))
        return lines

    prev: dict[str, list[str]] = {}
    for p in previous:
        for k, v in p.items():
            prev.setdefault(k, []).extend(v)

    new_tokens = set().union(*(_tokens(t) for _, t in done_new)) if done_new else set()
    prev_in_progress, moved = [], []
    for it in prev.get(IN_PROGRESS, []):
        (moved if ev.tasks or _tokens(it) & new_tokens else prev_in_progress).append(it)
    fixed_text = " ".join(fixed)
    prev_blocked = [b for b in prev.get(BLOCKED, []) if not (_tokens(b) & new_tokens) and b not in fixed_text]

    # Goal: earlier goals, then the tasks of this part (the first and the newest ones).
    tasks = [_goal(t) for _, t in ev.tasks]
    if len(tasks) > 5:
        tasks = tasks[:2] + tasks[-3:]
    goals = dedupe([*prev.get(GOAL, [])[:3], *tasks])
    if len(goals) > _CAPS[GOAL]:
        goals = goals[:2] + goals[-(_CAPS[GOAL] - 2) :]
    add(GOAL, goals)
    add(CONSTRAINTS, capped(CONSTRAINTS, [*prev.get(CONSTRAINTS, []), *ev.constraints]))

    checks_ok = [f"`{fam}` passes" for fam, (seq, ok) in ev.checks.items() if ok and seq >= ev.last_edit_seq]
    done_items = [("prev", t) for t in prev.get(DONE, [])] + [("prev", t) for t in moved]
    done_items += done_new + [("fixed", t) for t in fixed] + [("check", t) for t in checks_ok]
    seen: set[str] = set()
    done_items = [(k, t) for k, t in done_items if not (norm(t) in seen or seen.add(norm(t)))]  # type: ignore[func-returns-value]
    add(DONE, _trim_done(done_items, _CAPS[DONE]))

    in_progress: list[str] = []
    if open_work and last_task:
        in_progress.append("Working on: " + _goal(last_task, 300))
    if ev.ends_mid_work and ev.last_step:
        in_progress.append("Last step: " + ev.last_step)
    if open_work and correction_is_latest and last_correction:
        in_progress.append(f'Reworking it after the user\'s correction: "{clip(last_correction[1], 300)}"')
    if ev.uncommitted:
        in_progress.append("Uncommitted changes: " + ", ".join(ev.uncommitted[-8:]))
    in_progress += ev.pending
    add(IN_PROGRESS, capped(IN_PROGRESS, [*prev_in_progress, *in_progress]))
    add(BLOCKED, capped(BLOCKED, [*prev_blocked, *errors]))

    decisions = [("prev", d) for d in prev.get(DECISIONS, [])] + _decisions(ev)
    while len(decisions) > _CAPS[DECISIONS]:  # plain choices go before rejections and user quotes
        idx = next((i for i, (k, _) in enumerate(decisions) if k in ("assistant", "prev")), 0)
        decisions.pop(idx)
    add(DECISIONS, dedupe(t for _, t in decisions))

    nexts: list[str] = []
    if open_work and last_task:
        nexts.append("Finish: " + _goal(last_task, 300))
    if ev.final_text:
        nexts += _offered_steps(ev.final_text)
    for fam, (seq, ok) in ev.checks.items():
        if ok and seq < ev.last_edit_seq:  # passed, but edits came after: check again
            nexts.append(f"Run `{fam}` again")
    if ev.uncommitted:
        nexts.append("Commit the changes to " + ", ".join(ev.uncommitted[-5:]))
    nexts += [f"Fix: {clip(f.line, _MAX_ERROR)} (from {f.call.short()})" for f in ev.errors[-2:]]
    if not nexts and ev.final_text and ev.tasks and not prev.get(NEXT):
        nexts.append("Nothing pending: the last request was answered; wait for the user's next one")
    add(NEXT, capped(NEXT, dedupe(nexts) if nexts else prev.get(NEXT, [])))

    if kind == SummaryKind.HISTORY:
        critical, modified, mentions, renamed, deleted = [], [], [], [], []
        for item in prev.get(CRITICAL, []):
            for label, bucket in ((_FILES_CHANGED, modified), (_MENTIONED, mentions), (_FILES_RENAMED, renamed),
                                  (_FILES_DELETED, deleted)):
                if item.startswith(label):
                    bucket += item[len(label) :].split(", ")
                    break
            else:
                critical.append(item)
        critical += [_USER_ERROR + e for e in ev.user_errors[-4:]]
        critical += [f"Error from {f.call.short()}: {clip(f.line, _MAX_ERROR)}" for f in ev.errors]
        renamed = dedupe([*renamed, *(f"{a} → {b}" for a, b in ev.renamed)])
        deleted = dedupe([*deleted, *ev.deleted])
        modified = dedupe([*modified, *ev.modified])
        for src, dst in ev.renamed:
            modified = [dst if m == src else m for m in modified]
        modified = [m for m in modified if m not in deleted]
        if modified:
            critical.append(_FILES_CHANGED + ", ".join(modified))
        if renamed:
            critical.append(_FILES_RENAMED + ", ".join(renamed[-20:]))
        if deleted:
            critical.append(_FILES_DELETED + ", ".join(deleted[-20:]))
        add(CRITICAL, capped(CRITICAL, critical))
        mentions = dedupe([*mentions, *(clip(m, 120) for m in ev.mentions)])
        if mentions:  # least important: the first thing to go when the budget is tight
            add(CRITICAL, [_MENTIONED + ", ".join(mentions[-25:])], priority=0)
    return lines


def _last_narration(ev: Evidence) -> str | None:
    for block in reversed(ev.narration):  # newest narration that says something
        first = next(iter(sentences(block)), "")
        if len(re.findall(r"[^\W\d_]{2,}", first)) >= 2:
            return clip(first, 300)
    return None


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
                    "isError": looks_failed(text),
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
    ev = collect(messages)
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
