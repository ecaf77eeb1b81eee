"""Stage 2→3: resolved facts (and a previous summary's sections) filed under the structured sections.

- Goal: the user's task statements (not pastes, acknowledgements, questions or requests to look at
  something), earlier goals first;
- Constraints: the user's rules, in their words;
- Done: what each edit changed and each write created, commits, renames and deletions, commands and
  what they printed, errors a later run or the assistant resolved, checks that pass with their counts,
  and the points of the assistant's end-of-turn recaps;
- In Progress: the open task when the conversation stops mid-work, calls without a result;
- Blocked: errors nothing resolved, verbatim;
- Key Decisions: the assistant's choices, rejected proposals with the user's reason, the approach
  adopted after a correction, the plan the user accepted;
- Next Steps: a user message nothing answered yet, the last open request (or its report, when the agent
  called it finished and was only checking), the steps of the last plan, what the last answer offered
  or left, open errors, where the last request stands — never an action the user forbade;
- Critical Context: findings, errors, files changed, renames and deletions, names mentioned.
"""

from __future__ import annotations

import re

from ..base import SummaryKind
from .commands import command_family, is_typed_error, program
from .dialog import CONSTRAINT_RE, polite, recap_items, stem
from .facts import Facts
from .resolve import Failure
from .render import Lines
from .sectionkeys import (
    BLOCKED, CONSTRAINTS, CRITICAL, DECISIONS, DONE, EARLY, GOAL, IN_PROGRESS, NEXT, REQUEST, SUFFIX, USER,
)
from .text import LIST_MARK, anchors, clause, clip, dedupe, joined, norm, sentences

_MAX_ERROR = 300
_FILES_CHANGED = "Files changed: "
_FILES_RENAMED = "Files renamed: "
_FILES_DELETED = "Files deleted: "
_MENTIONED = "Mentioned: "
_CAPS = {USER: 24, GOAL: 6, CONSTRAINTS: 14, DONE: 30, IN_PROGRESS: 6, BLOCKED: 6, DECISIONS: 12, NEXT: 6, CRITICAL: 20,
         EARLY: 30, SUFFIX: 15}
Previous = dict[str, list[str]]


def capped(section: str, items: list[str]) -> list[str]:
    items = dedupe(items)
    return items[-_CAPS[section]:]


def goal_text(request: str, limit: int = 400) -> str:
    """A request's aim: its leading sentences (later rules are constraints), at most `limit` chars."""
    picked: list[str] = []
    for s in sentences(request):
        s = LIST_MARK.sub("", s).strip()
        if polite(s):
            continue
        if picked and (CONSTRAINT_RE.search(s) or len(s.split()) < 4):
            continue
        if picked and sum(len(p) + 1 for p in picked) + len(s) > limit:
            break
        picked.append(s)
        if sum(len(p) for p in picked) >= 200:
            break
    return clip(" ".join(picked) if picked else request.strip(), limit)


def build(kind: SummaryKind, f: Facts, previous: list[Previous]) -> Lines:
    out = Lines()
    if kind == SummaryKind.TURN_PREFIX:
        _turn_prefix(out, f)
        return out
    prev: Previous = {}
    for p in previous:
        for k, v in p.items():
            prev.setdefault(k, []).extend(v)
    out.add(GOAL, _goals(f, prev))
    rules = capped(CONSTRAINTS, [*prev.get(CONSTRAINTS, []), *f.constraints])
    out.add(CONSTRAINTS, rules, ranks=[0 if r in f.instructions else 1 for r in rules])  # plain imperatives go first
    moved, still = _previous_in_progress(f, prev)
    done = _done(f, prev, moved)
    out.add(DONE, [t for _, t in done], ranks=[_DONE_RANK.get(k, 3) for k, _ in done])
    progress = capped(IN_PROGRESS, [*still, *_in_progress(f)])
    out.add(IN_PROGRESS, progress, ranks=[_progress_rank(t) for t in progress])
    out.add(BLOCKED, capped(BLOCKED, [*_previous_blocked(f, prev), *_blocked(f)]))
    decisions = _decisions(f, prev)
    out.add(DECISIONS, decisions, ranks=[_decision_rank(d) for d in decisions])
    out.add(NEXT, _next_steps(f, prev))
    if kind == SummaryKind.HISTORY:
        _critical(out, f, prev)
    said = _user_messages(f, prev)
    # Under a tight budget, rules and corrections stay longest, then tasks; a previous summary's first.
    weights = {norm(t): w for _, t, w in f.said}
    ranks = [weights.get(norm(t), 2) for t in said]
    covered = " ".join(norm(ln.text) for ln in out.items if ln.section in (GOAL, CONSTRAINTS))
    said = [_uncovered(t, covered) for t in said]  # what Goal and Constraints quote is not repeated
    if said and not any(said):
        said, ranks = ["(all quoted above, under Goal and Constraints)"], [2]
    out.add(USER, [t for t in said if t], ranks=[r for t, r in zip(said, ranks, strict=True) if t])
    if f.root:  # paths under the project root are shown relative to it, in commands too
        prefix = f.root.rstrip("/") + "/"
        for ln in out.items:
            if not ln.text.startswith("Project root: "):
                ln.text = ln.text.replace(prefix, "")
    workdir = _workdir(out)
    if workdir:  # the directory the commands keep changing to is said once, not at the head of each
        for ln in out.items:
            ln.text = re.sub(rf"`cd {re.escape(workdir)}(?:\s*(?:&&|;))?\s+", "`", ln.text)
        out.add(CRITICAL, [f"Commands run in: {workdir}"], ranks=[9])
    return out


# A command shown with the directory it first changes to: "`cd /path/to/repo && make`".
_CD = re.compile(r"`cd ([^\s`;&|]+)(?:\s*(?:&&|;))?\s+([^`]+)`")


def _workdir(out: Lines) -> str:
    """The directory two or more different shown commands start by changing to ('' when none)."""
    seen: dict[str, set[str]] = {}
    for ln in out.items:
        for d, rest in _CD.findall(ln.text):
            seen.setdefault(d, set()).add(rest)
    best = max(seen.items(), key=lambda kv: len(kv[1]), default=("", set()))
    return best[0] if len(best[1]) >= 2 else ""


def _user_messages(f: Facts, prev: Previous) -> list[str]:
    """Every message the user wrote, condensed, oldest first: where their rules, reasons and
    corrections are in their own words. When there are too many, the first two and the newest."""
    said = dedupe([*prev.get(USER, []), *(t for _, t, _ in f.said)])
    cap = _CAPS[USER]
    return said if len(said) <= cap else said[:2] + said[-(cap - 2):]


# Where a sentence ends: Western marks before a space; the full-width marks of Chinese and Japanese
# with or without one. A CJK character counts twice toward a sentence's length (it carries about a word).
_SENTENCE_BREAK = re.compile(r"(?<=[.!?…])\s+|(?<=[。！？])\s*")
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uf900-\ufaff]")


def _uncovered(message: str, covered: str) -> str:
    """A user message without the sentences Goal or Constraints already quote ('' when nothing is left
    but its elisions)."""
    parts = [p.strip() for p in _SENTENCE_BREAK.split(message) if p.strip()]
    kept = [p for p in parts if len(norm(p)) + len(_CJK.findall(p)) < 24 or norm(p) not in covered]
    if len(kept) == len(parts):
        return message
    text = re.sub(r"(?:\s*…\s*){2,}", " … ", " ".join(kept)).strip()
    return text if re.search(r"\w{2,}", text.replace("…", "")) else ""


def _open_work(f: Facts) -> bool:
    return f.ends_mid_work or bool(f.pending) or f.last_user_seq > f.last_assistant_seq


def _fixed_lines(f: Facts) -> list[str]:
    return [f"Fixed: {clip(x.line, _MAX_ERROR)} (from `{_short_command(x.call.command)}`)"
            + (f" — {x.diagnosis}" if x.diagnosis else "")
            for x in _first_per_line(f.fixed) if x.call.command and is_typed_error(x.line)
            and not _version_control(x.call.command)][-6:]


def _version_control(command: str) -> bool:
    """A git / gh command: a push or rebase that failed and then went through is housekeeping, not a fix
    of the work."""
    return program(command).split(" ")[0] in ("git", "gh")


def _short_command(command: str) -> str:
    """A long command named by the check it runs (`pytest`, `cargo test`), else clipped."""
    family = command_family(command)
    return family if family and len(command) > 60 else clip(command, 100)


def _first_per_line(failures: list[Failure]) -> list[Failure]:
    """One failure per error text: the same error from several runs is one item."""
    seen: dict[str, Failure] = {}
    for x in failures:
        seen.setdefault(x.line, x)
    return list(seen.values())


def _error_lines(f: Facts) -> list[str]:
    return [f"{x.call.short()} failed: {clip(x.line, _MAX_ERROR)}" + (f" [{x.tally}]" if x.tally else "")
            for x in _first_per_line(f.errors)]


def _goals(f: Facts, prev: Previous) -> list[str]:
    # The first task as stated, later ones by their opening (their full words are under User Messages).
    tasks = [goal_text(t, 400 if i == 0 else 200) for i, (_, t) in enumerate(f.tasks)]
    if len(tasks) > 5:
        tasks = tasks[:2] + tasks[-3:]
    goals = dedupe([*prev.get(GOAL, [])[:3], *tasks])
    return goals[:2] + goals[-(_CAPS[GOAL] - 2):] if len(goals) > _CAPS[GOAL] else goals


def _previous_in_progress(f: Facts, prev: Previous) -> tuple[list[str], list[str]]:
    """Previous In Progress items: done when new work touched what they name (all of them when the
    user has moved on to new tasks)."""
    touched = set().union(*(anchors(t) for _, _, t in f.done)) if f.done else set()
    moved, still = [], []
    for it in prev.get(IN_PROGRESS, []):
        (moved if f.tasks or anchors(it) & touched else still).append(it)
    return moved, still


def _previous_blocked(f: Facts, prev: Previous) -> list[str]:
    touched = set().union(*(anchors(t) for _, _, t in f.done)) if f.done else set()
    fixed = " ".join(_fixed_lines(f))
    return [b for b in prev.get(BLOCKED, []) if not (anchors(b) & touched) and b not in fixed]


# Which Done lines give way first when the budget is tight: plain commands, then recap sentences and
# other tools, then a previous summary's items; edits, commits, fixes and checks last.
_DONE_RANK = {"command": 0, "shown": 1, "recap": 1, "other": 1, "digest": 1, "todo": 2, "prev": 2}


def _done(f: Facts, prev: Previous, moved: list[str]) -> list[tuple[str, str]]:
    checks_ok = [f"`{fam}` passes" + (f" ({f.tallies[fam]})" if f.tallies.get(fam) else "")
                 + ("" if seq >= f.last_code_edit_seq else " (before the last edits)")
                 for fam, (seq, ok) in f.checks.items() if ok]
    items = [("prev", t) for t in [*prev.get(DONE, []), *moved]]
    items += [(k, t) for _, k, t in f.done] + [("fixed", t) for t in _fixed_lines(f)]
    items += [("check", t) for t in checks_ok]
    items += [("recap", t) for _, pts in f.recaps[-6:] for t in pts[:4]]
    items += [("todo", t) for st, t in f.todos if st == "completed"]
    seen: set[str] = set()
    items = [(k, t) for k, t in items if not (norm(t) in seen or seen.add(norm(t)))]  # type: ignore[func-returns-value]
    for kind in ("command", "other", "digest", "recap", "prev"):  # plain commands go first, then tools, digests, recaps
        while len(items) > _CAPS[DONE]:
            idx = next((i for i, (k, _) in enumerate(items) if k == kind), None)
            if idx is None:
                break
            items.pop(idx)
    return items[-_CAPS[DONE]:]


# Which In Progress lines stay longest when the budget is tight: what the agent was doing and what the
# user last asked, before the lists of files and the steps set out (the order they are written in).
_PROGRESS_RANKS = (("Doing: ", 6), ("Last step: ", 6), ("Working on: ", 6), ("Reworking it", 5), ("Latest request: ", 5),
                   ("Last result", 4), ("Steps set out", 2), ("Changed since", 1), ("Uncommitted", 1))


def _progress_rank(line: str) -> int:
    return next((rank for label, rank in _PROGRESS_RANKS if line.startswith(label)), 3)


def _in_progress(f: Facts) -> list[str]:
    items: list[str] = []
    open_work = _open_work(f)
    last_task = f.tasks[-1][1] if f.tasks else None
    if open_work and last_task and len(f.tasks) > 1:  # the only task is the Goal, whole under Next Steps
        items.append("Working on: " + goal_text(last_task, 160))
    last = f.corrections[-1] if f.corrections else None
    reworking = bool(open_work and last and (not f.tasks or last[0] > f.tasks[-1][0]))
    if open_work and f.last_request and not (reworking and last and last[0] == f.last_user_seq) and (
            not last_task or norm(f.last_request) not in norm(last_task)
            and norm(goal_text(last_task, 300)) not in norm(f.last_request)):  # (a correction is quoted below)
        items.append("Latest request: " + f.last_request)
    if f.ends_mid_work and f.recent_steps:  # what the agent said it was doing, and its last calls
        items.append("Doing: " + joined(dedupe(f.recent_steps)) + (f" — {f.last_calls}" if f.last_calls else ""))
    elif f.ends_mid_work and f.last_step:
        items.append("Last step: " + f.last_step)
    if f.ends_mid_work and not f.pending and f.unreported:  # what the next message would have reported
        items.append("Last result, not yet reported: " + f.unreported)
    if f.ends_mid_work and f.touched and f.touched[-8:] != f.uncommitted[-8:]:  # where the current piece has got to
        items.append("Changed since the latest request: " + ", ".join(f.show(p) for p in f.touched[-5:]))
    if f.ends_mid_work and f.working_plan and f.working_plan_seq > f.last_user_seq:
        items.append("Steps set out for it: " + clip(joined(f.working_plan), 400))
    if reworking and last:
        items.append(f'Reworking it after the user\'s correction: "{clip(last[1], 240)}"')
    items += ["Working on: " + t for st, t in f.todos if st == "in_progress"]
    if f.uncommitted:
        items.append("Uncommitted changes: " + ", ".join(f.show(p) for p in f.uncommitted[-8:]))
    return items + f.pending


def _blocked(f: Facts) -> list[str]:
    return _error_lines(f)


def _decisions(f: Facts, prev: Previous) -> list[str]:
    items: list[tuple[str, str]] = [("prev", d) for d in prev.get(DECISIONS, [])]
    for d in f.decisions:
        if d.seq == f.accepted_offer[0] > f.last_assistant_seq:  # a yes the region ends on: Next Steps says it
            continue
        text = clip(d.text, 400)
        if d.kind == "rejected":
            reason = f" — {clip(d.reason, 240)}" if d.reason else ""
            items.append(("rejected", f"**Rejected by the user**: {text}{reason}"))
        elif d.kind == "user":
            items.append(("user", f"**User**: {text}"))
        elif d.kind == "switch":
            items.append(("switch", text))
        elif d.kind == "adopted":
            items.append(("adopted", f"**Adopted instead**: {text}"))
        else:
            items.append(("assistant", _decision_line(text)))
    if f.plan and f.plan_accepted:
        items.append(("plan", "**Plan agreed with the user**: " + clip(joined(f.plan), 500)))
    while len(items) > _CAPS[DECISIONS]:  # plain choices go before rejections and the user's words
        idx = next((i for i, (k, _) in enumerate(items) if k in ("assistant", "prev")), 0)
        items.pop(idx)
    return dedupe(t for _, t in items)


# What the user chose, refused or agreed to outlasts the agent's own choices under a tight budget.
_USERS_CALL = ("**Rejected by the user**", "**User", "**Adopted instead**", "**Plan agreed", "**Plan approved", "**Use `")


def _decision_rank(line: str) -> int:
    return 2 if line.startswith(_USERS_CALL) else 1


def _decision_line(sentence: str) -> str:
    m = re.match(r"(.+?)\s+(because|since|so that|as)\s+(.+)", sentence)
    if m and len(m.group(1)) > 8:
        return f"**{m.group(1).rstrip(',;:')}**: {m.group(2)} {m.group(3)}"
    return f"**{sentence}**"


def _next_steps(f: Facts, prev: Previous) -> list[str]:
    steps: list[str] = []
    last_task = f.tasks[-1][1] if f.tasks else None
    if f.stopped_seq > max(f.last_assistant_seq, f.last_user_seq):  # stopped, and no word from anyone since
        steps.append("The user stopped the agent mid-turn" + (f" (during: {clip(f.last_step, 200)})" if f.last_step else "")
                     + "; wait for their direction before going on")
    if f.asked:  # the agent put questions to the user and the region ends before the answers
        steps.append("Wait for the user's answers to the questions put to them: " + "; ".join(f.asked))
    if f.awaiting_approval:  # its steps follow, as the plan's
        steps.append(f"Wait for the user to approve the plan put to them (“{f.awaiting_approval}”), then carry it out")
    unanswered = f.last_user_seq > f.last_assistant_seq and f.last_request
    if unanswered and not (last_task and norm(f.last_request) in norm(last_task)):
        # the user spoke last and nothing replied yet: that message is the first thing to act on
        steps.append(f"Reply to the user's latest message, not yet answered: “{clip(f.last_request, 300)}”")
    seq, claim = f.claimed_done
    checking = f.ends_mid_work and claim and not any(x.seq > seq for x in f.errors)
    if checking:  # the agent said it is finished and was running a last check: what is left is the report
        steps.append(f"Report the finished work to the user once the check under way comes back (the agent: “{claim}”)")
    elif _open_work(f) and last_task and not f.awaiting_approval:  # a plan put up is the work of its turn
        steps.append("Finish: " + goal_text(last_task, 300))
    steps += [t for st, t in f.todos if st == "pending"]
    last_recap = f.recaps[-1][0] if f.recaps else -1
    if f.plan and f.plan_seq >= last_recap and (f.plan_accepted or f.plan_seq == f.last_assistant_seq):
        steps += f.plan
    if f.final_text:
        steps += offered_steps(f.final_text)
    steps += [f"Fix: {clip(x.line, _MAX_ERROR)} (from {x.call.short()})" for x in f.errors[-2:]]
    last_check = max(f.checks.items(), key=lambda kv: kv[1][0], default=None)
    if last_check:  # the last check passed, but code changed since and nothing committed it: run it again
        fam, (seq, ok) = last_check
        if ok and seq < f.last_code_edit_seq and f.last_commit_seq < f.last_code_edit_seq:
            steps.append(f"Run `{fam}` again")
    if f.uncommitted:
        steps.append("Commit the changes to " + ", ".join(f.show(p) for p in f.uncommitted[-5:]))
    steps += [f"Later, as the user said: “{t}”" for t in f.later[-2:]]
    steps += [f"Not the agent's: the user will {t} themselves" for t in f.users_own[-2:]]
    steps = [s for s in steps if not _forbidden(s, f.forbidden)]
    status = _last_request_status(f, steps)
    agreed_seq, reply, offer = f.accepted_offer
    if agreed_seq > f.last_assistant_seq:  # the region ends on the user's yes to an offer: doing it comes first
        status = []
        steps = [f"Do what the user just agreed to (“{clip(reply, 40)}”): {clip(offer, 300)}",
                 *(s for s in steps if not (s.startswith("Offered: ") and s[9:] in offer))]
    if status and status[0].startswith(_WAIT_OFFER):  # the offer is the thing waited on, not a step of its own
        steps = [s for s in steps if not (s.startswith("Offered: ") and s[9:] in status[0])]
    if status and steps and not status[0].startswith("Wait"):  # answered, with work left: the steps come first
        steps, status = [*steps, *status], []
    if not steps and not status and f.final_text and f.tasks and not prev.get(NEXT):
        steps.append("Nothing pending: the last request was answered; wait for the user's next one")
    # Most pressing first (a wait, the open request, then the plan's steps): a long plan loses its tail.
    return dedupe([*status, *steps])[:_CAPS[NEXT]] if steps or status else capped(NEXT, prev.get(NEXT, []))


_WAIT_OFFER = "Wait for the user's answer to the offer "


def _last_request_status(f: Facts, steps: list[str]) -> list[str]:
    """Where the user's latest request stands when the conversation stops after a reply: waiting on a
    question the assistant put to the user, or answered (with the reply's headline, unless that is
    one of the steps left)."""
    if not f.final_text or _open_work(f) or not f.last_request:
        return []
    asked = f"the user's last request (“{clip(f.last_request, 160)}”)"
    said = sentences(f.final_text)
    question = said[-1] if said and said[-1].endswith("?") else ""
    if question and offered_steps(question):  # the reply ends by offering to go on: that waits on the user's word
        return [f"{_WAIT_OFFER}“{clip(question, 200)}” (the last reply, to {asked})"]
    if question:
        return [f"Wait for the user's answer to “{clip(question, 200)}” (the last reply, to {asked})"]
    gist = next(iter(recap_items(f.final_text, 1)), "")
    gist = "" if any(norm(gist) in norm(s) for s in steps) else gist
    answered = f"{asked} was answered" + (f" — {clause(clip(gist, 160))}" if gist else "")
    if steps:  # the steps say what is left of it; a request that is the Goal is not quoted again
        goal = norm(f.tasks[0][1]) if len(f.tasks) == 1 else ""
        return [] if goal and norm(f.last_request) in goal else [answered[0].upper() + answered[1:]]
    return [f"Nothing pending: {answered}; wait for the user's next one"]


def _forbidden(step: str, verbs: set[str]) -> bool:
    """A step that proposes an action the user forbade (its leading verb)."""
    words = re.findall(r"[A-Za-z]+", step.split(":", 1)[-1] if step.startswith(("Finish:", "Fix:")) else step)
    return bool(words) and stem(words[0]) in verbs


# A lead-in (a line ending in ':' or a heading) to a list of what is still to do: "Next steps:",
# "Remaining:", "Still to do:", "## Follow-ups", "Open questions:".
_LEFT = r"\b(?:next|remaining|left|to ?do|follow[- ]?ups?|outstanding|pending|open (?:items|questions|issues)|not yet done)\b"
_WHAT_IS_LEFT = re.compile(rf"{_LEFT}[^.]*:\s*\**$|^#+\s.*{_LEFT}", re.I)


def offered_steps(final_text: str) -> list[str]:
    """Next steps an answer offers: items of a list introduced by "next", or closing offers."""
    steps: list[str] = []
    in_next = False
    for line in final_text.splitlines():
        s = line.strip()
        if not s:
            continue
        if _WHAT_IS_LEFT.search(s):
            in_next = True
            continue
        if in_next and LIST_MARK.match(s):
            steps.append(clip(LIST_MARK.sub("", s), 200))
        elif in_next:
            in_next = False
    for s in sentences(final_text)[-4:]:
        if re.search(r"\b(?:want me to|should I|shall I|would you like me to|do you want me to|(?:let me know|tell me) "
                     r"if you(?:'d| would)? (?:like|want) me to|if you(?:'d| would)? like,? I can|if you want,? I can)\b",
                     s, re.I):
            steps.append(clip("Offered: " + s, 300))
        elif (re.match(r"^next(?: is| up| step)?\b", s, re.I) or _STILL_TO_DO.search(s)) and not s.endswith(":"):
            steps.append(clip(s, 300))
    return steps


# A sentence that says what is left: "The next step is ...", "X still needs a test", "What remains is ...",
# "Once that is merged, we can ...".
_STILL_TO_DO = re.compile(
    r"^(?:the )?(?:next|remaining|outstanding|last) (?:step|thing|task|piece|part)s? (?:is|are|would be|will be)\b"
    r"|^what(?:'s| is) (?:left|remaining)\b|^what remains\b|\bstill (?:needs?|has to|have to|requires?)\b"
    r"|\b(?:is|are) still (?:missing|pending|open|to do|untested|unimplemented)\b"
    r"|^(?:once|after|when) [^,]{3,100}, (?:we|you|I)(?: still)? (?:can|could|should|will need to|need to|must)\b",
    re.IGNORECASE)


def _critical(out: Lines, f: Facts, prev: Previous) -> None:
    critical, modified, mentions, renamed, deleted = [], [], [], [], []
    for item in prev.get(CRITICAL, []):
        for label, bucket in ((_FILES_CHANGED, modified), (_MENTIONED, mentions), (_FILES_RENAMED, renamed),
                              (_FILES_DELETED, deleted)):
            if item.startswith(label):
                bucket += item[len(label):].split(", ")
                break
        else:
            critical.append(item)
    if f.root:  # the key to every relative path: the last line of the section to go
        out.add(CRITICAL, [f"Project root: {f.root} (paths in this summary are relative to it)"], ranks=[9])
    critical += ["Error reported by the user: " + e for e in f.user_errors[-4:]]
    critical += [f"Left open at the user's word (\"{x.deferred}\"): {x.call.short()}: {clip(x.line, _MAX_ERROR)}"
                 for x in f.deferred]
    critical += ["Finding: " + s for s in f.findings[-6:]]
    critical += [f"Not installed here: `{m.program}` ({clip(m.line, 120)})" + (f" — {m.instead}" if m.instead else "")
                 for m in {m.program: m for m in f.missing}.values()]
    renamed = dedupe([*renamed, *(f"{a} → {b}" for a, b in f.renamed)])
    deleted = dedupe([*deleted, *f.deleted])
    modified = dedupe([*modified, *(f.show(p) for p in f.modified)])
    for src, dst in f.renamed:
        modified = [f.show(dst) if m == f.show(src) else m for m in modified]
    modified = [m for m in modified if m not in deleted]
    out.add(CRITICAL, capped(CRITICAL, critical))
    out.add(CRITICAL, [f"Error from {x.call.short()}: {clip(x.line, _MAX_ERROR)}" for x in f.errors], priority=1)
    # Repeats of what Done says (and of the file lists code appends): the first to go when tight.
    files = []
    if modified:
        files.append(_FILES_CHANGED + ", ".join(modified))
    if renamed:
        files.append(_FILES_RENAMED + ", ".join(renamed[-20:]))
    if deleted:
        files.append(_FILES_DELETED + ", ".join(deleted[-20:]))
    out.add(CRITICAL, files, priority=1)
    # What the files read turned out to be (not the ones changed, Done describes those): kept when
    # there is room, which is when the work was mostly reading.
    notes = [f"Read {f.show(p)}: {n}" for p, n in f.read_notes.items() if p not in f.changes]
    cut = (f.root.rstrip("/") + "/") if f.root else "\0"
    reading = not f.changes  # the work was reading: what was read and looked at is its substance,
    # trimmed by share under a tight budget rather than first; while changing files, only a glimpse
    width, kept = (1000, 8) if reading else (200, 4)
    looked = [f"Looked: `{clip(cmd, 100)}` → {clip(seen.replace(cut, ''), width)}" for cmd, seen in f.looked]
    out.add(CRITICAL, notes[-(30 if reading else 12):] + dedupe(looked)[-kept:], priority=3 if reading else 1)
    mentions = dedupe([*mentions, *(clip(m, 120) for m in f.mentions)])
    if mentions:  # least important: the first thing to go when the budget is tight
        out.add(CRITICAL, [_MENTIONED + ", ".join(mentions[-25:])], priority=0)


def _turn_prefix(out: Lines, f: Facts) -> None:
    out.add(REQUEST, [clip(f.first_user_raw, 1200)] if f.first_user_raw else [])
    out.add(EARLY, capped(EARLY, [*[t for _, _, t in f.done], *_fixed_lines(f), *_error_lines(f)]))
    suffix = []
    narr = _last_narration(f)
    if narr:
        suffix.append(narr)
    suffix += f.pending
    if f.modified:
        suffix.append("Files changed so far: " + ", ".join(f.modified))
    if f.read:
        suffix.append("Files read so far: " + ", ".join(f.read[-10:]))
    suffix += [f"Error from {x.call.short()}: {clip(x.line, _MAX_ERROR)}" for x in f.errors]
    suffix += [f"Constraint: {c}" for c in f.constraints]
    out.add(SUFFIX, capped(SUFFIX, suffix))


def _last_narration(f: Facts) -> str | None:
    for block in reversed(f.narration):  # newest narration that says something
        first = next(iter(sentences(block)), "")
        if len(re.findall(r"[^\W\d_]{2,}", first)) >= 2:
            return clip(first, 300)
    return None
