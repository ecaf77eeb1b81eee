"""Stage 1, extract: one pass over the convertToLlm messages collects the facts of a conversation —
the user's tasks, rules and corrections; the assistant's choices, findings, plans and recaps; what each
tool call did and what came back. Resolution (resolve.py) runs as later evidence arrives.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from . import dialog as dl
from . import layout, replies
from .commands import READ_ONLY_TOOLS, Call, describe, error_line, interrupted, looks_failed
from .edits import Change, describe_edit, describe_write
from .findings import labelled
from .markup import declined, envelope_failed, read_user, strip_injected, without_envelope
from .resolve import Decision, Failure, Missing, resolve_by_claim, resolve_by_success, unreject_carried_out
from .text import CODE, FUNC, MAX_QUOTE, PATH, clip, dedupe, project_root, sentences, shortener, text_of
from .tools import ToolEffects

_BASH_USER = re.compile(r"^Ran `(?P<cmd>[^\n]*)`\n(?P<rest>.*)$", re.DOTALL)
_SUMMARY_BLOCK = re.compile(r"<summary>\n?(.*?)\n?</summary>", re.DOTALL)
_EDIT_TOOLS = ("edit", "write", "multi_edit", "multiedit", "str_replace", "create", "notebookedit")
# The agent's own task list (a todo tool that rewrites the whole list), a plan put to the user for
# approval, and work handed to a sub-agent whose report comes back as the result.
_TODO_TOOLS = ("todowrite", "todo_write", "update_plan", "todo", "todos")
_PLAN_TOOLS = ("exitplanmode", "exit_plan_mode")
_AGENT_TOOLS = ("task", "agent", "subagent", "dispatch_agent")
_ASK_TOOLS = ("askuserquestion", "ask_user", "ask_user_question")


@dataclass
class Facts:
    tasks: list[tuple[int, str]] = field(default_factory=list)  # (seq, cleaned text)
    corrections: list[tuple[int, str]] = field(default_factory=list)
    constraints: list[str] = field(default_factory=list)
    instructions: set[str] = field(default_factory=set)  # constraints that are plain imperatives: the first to go
    later: list[str] = field(default_factory=list)  # work the user put off until something else happens
    forbidden: set[str] = field(default_factory=set)  # stems of actions the user forbade
    user_errors: list[str] = field(default_factory=list)
    done: list[tuple[int, str, str]] = field(default_factory=list)  # (seq, kind, text)
    failures: list[Failure] = field(default_factory=list)
    decisions: list[Decision] = field(default_factory=list)
    findings: list[str] = field(default_factory=list)
    recaps: list[tuple[int, list[str]]] = field(default_factory=list)  # end-of-turn points
    plan: list[str] = field(default_factory=list)  # the last plan the assistant put forward
    plan_seq: int = -1
    plan_accepted: bool = False
    pending: list[str] = field(default_factory=list)
    changes: dict[str, Change] = field(default_factory=dict)
    modified: list[str] = field(default_factory=list)  # current names, rename-aware, deletions removed
    read: list[str] = field(default_factory=list)
    read_notes: dict[str, str] = field(default_factory=dict)  # path -> what the file is (title, definitions)
    missing: list[Missing] = field(default_factory=list)  # programs not installed
    looked: list[tuple[str, str]] = field(default_factory=list)  # read-only commands with a short output
    renamed: list[tuple[str, str]] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    uncommitted: list[str] = field(default_factory=list)
    checks: dict[str, tuple[int, bool]] = field(default_factory=dict)  # family -> (seq of last run, passed)
    tallies: dict[str, str] = field(default_factory=dict)  # family -> counts of its last run
    last_edit_seq: int = -1
    last_code_edit_seq: int = -1
    last_user_seq: int = -1
    first_user_raw: str | None = None
    ends_mid_work: bool = False
    final_text: str = ""
    last_step: str = ""
    working_plan: list[str] = field(default_factory=list)  # numbered steps announced mid-turn
    working_plan_seq: int = -1
    last_calls: str = ""  # the tool calls of the last assistant message
    unreported: str = ""  # what the last call printed, when the cut came before the agent said anything of it
    last_request: str = ""  # the user's latest message (condensed), whatever kind it is
    recent_steps: list[str] = field(default_factory=list)  # what the agent said it was doing since then
    touched: list[str] = field(default_factory=list)  # files changed since the user's latest request
    claimed_done: tuple[int, str] = (-1, "")  # the agent saying, since that request, that the work is finished
    last_assistant_seq: int = -1
    narration: list[str] = field(default_factory=list)
    mentions: list[str] = field(default_factory=list)
    embedded: list[str] = field(default_factory=list)
    said: list[tuple[int, str, int]] = field(default_factory=list)  # every user message condensed, its weight
    todos: list[tuple[str, str]] = field(default_factory=list)  # the agent's latest task list: (status, item)
    asked: list[str] = field(default_factory=list)  # questions put to the user the region ends waiting on
    stopped_seq: int = -1  # where the user last interrupted the agent
    awaiting_approval: str = ""  # the title of a plan put to the user for approval, the region ending there
    users_own: list[str] = field(default_factory=list)  # work the user said they will do themselves
    accepted_offer: tuple[int, str, str] = (-1, "", "")  # the user's yes to the offer a reply ended with: (seq, reply, offer)

    last_commit_seq: int = -1
    root: str = ""  # the project directory absolute paths share ('' when none)

    def show(self, path: str) -> str:
        return shortener(self.root)(path)

    @property
    def errors(self) -> list[Failure]:
        return [f for f in self.failures if not f.resolved and not f.deferred]

    @property
    def deferred(self) -> list[Failure]:
        return [f for f in self.failures if not f.resolved and f.deferred]

    @property
    def fixed(self) -> list[Failure]:
        return [f for f in self.failures if f.resolved]


def collect(messages: list[dict[str, Any]]) -> Facts:
    p = _Pass()
    for msg in messages:
        p.message(msg)
    return p.finish()


class _Pass:
    def __init__(self) -> None:
        self.f = Facts()
        self.seq = 0
        self.calls: dict[str, Call] = {}
        self.open_calls: dict[str, Call] = {}
        self.tools = ToolEffects(self.f)
        self.prev_role = ""
        self.last_assistant_text = ""
        self.awaiting_adoption = False
        self.last_said = ""

    def message(self, msg: dict[str, Any]) -> None:
        self.seq += 1
        role = msg.get("role")
        if role == "user":
            self.user(text_of(msg.get("content")))
        elif role == "assistant":
            content = msg.get("content")
            self.assistant(content if isinstance(content, list) else [])
        elif role == "toolResult":
            self.result(msg)
        self.prev_role = str(role)

    # -- the user ------------------------------------------------------------------------------
    def user(self, text: str) -> None:
        f = self.f
        after_proposal = self.prev_role == "assistant" and bool(dl.PROPOSAL.search(self.last_assistant_text))
        blocks = _SUMMARY_BLOCK.findall(text)
        if blocks:
            f.embedded.extend(blocks)
            return
        bash = _BASH_USER.match(text)
        if bash:  # the user's own `!command`
            self.user_command(bash.group("cmd"), bash.group("rest"))
            return
        turn = read_user(text)
        if turn.interrupted:
            f.stopped_seq = self.seq
        if turn.shell:  # the user's own shell command, in the harness's markup
            self.user_command(*turn.shell)
            return
        text = turn.text
        if turn.skill:  # a skill's instructions: rules the agent works under, not the user's words
            self.skill_loaded(turn.skill, text)
            return
        if turn.command and text and len(text.split()) <= 3:  # `/name args`: the request is the command itself
            self.command_invoked(f"{turn.command} {text}")
            return
        if not text:  # an interruption, or a slash command without arguments: no words of the user
            return
        if f.first_user_raw is None and text.strip():
            f.first_user_raw = text.strip()
        cleaned, errors = dl.clean_user_text(text)
        cleaned = dl.unwrapped(cleaned)  # hard-wrapped prose back into paragraphs
        f.user_errors.extend(errors)
        kind = dl.classify_user(cleaned)
        if after_proposal_reply(self, cleaned) and kind in ("direction", "task", "rule", "question"):
            kind = "correction"  # a refusal of what was just proposed, however politely put
        if kind == "rule" and not f.tasks and len(cleaned.split()) >= 12:
            kind = "task"  # the opening message states the task, whatever rules it also gives
        f.mentions.extend(PATH.findall(cleaned) + FUNC.findall(cleaned) + CODE.findall(cleaned))
        picked = dl.picked_option(cleaned, self.last_assistant_text) if self.prev_role == "assistant" else None
        if picked:  # a short reply that picks one of the options just offered: a decision of the user's
            f.decisions.append(Decision(f"**User chose**: {picked} (“{clip(cleaned, 80)}”)", self.seq, "switch"))
            f.said.append((self.seq, f"{clip(cleaned, 80)} (chose: {picked})", 2))
        condensed = ""
        if not dl.is_ack(cleaned) and not picked:
            condensed = dl.condense(cleaned, 600 if not f.tasks else 240)  # the opening task is the fullest
            if condensed:  # how long it stays under a tight budget: rules and corrections longest
                weight = 2 if kind in ("correction", "direction", "rule") or dl.CONSTRAINT_RE.search(condensed) else (
                    1 if kind == "task" else 0)
                f.said.append((self.seq, condensed, weight))
        if kind == "ack":
            self.rules(dl.conditions(cleaned))  # "proceed, but ...": what the go-ahead comes with
            if after_proposal and f.plan_seq == f.last_assistant_seq:
                f.plan_accepted = True  # "go ahead" right after a plan accepts it
            offer = replies.closing_offer(self.last_assistant_text) if self.prev_role == "assistant" else ""
            if offer and replies.bare_no(cleaned):  # a bare yes or no to the offer the last reply ended with
                f.decisions.append(Decision(clip(offer, 300), self.seq, "rejected"))
            elif offer and replies.says_yes(cleaned, offer):
                f.decisions.append(Decision(f"**User agreed** (“{clip(cleaned, 40)}”) to: {clip(offer, 300)}",
                                            self.seq, "switch"))
                f.accepted_offer = (self.seq, cleaned, offer)
            return
        f.later.extend(dl.follow_ups(cleaned))
        f.users_own.extend(dl.users_own(cleaned))
        if dl.defers(cleaned):  # the open problems are put aside, not blocking
            for x in f.errors:
                x.deferred = clip(cleaned, 200)
        self.last_said = ""
        f.last_user_seq = self.seq
        f.recent_steps, f.touched, f.claimed_done = [], [], (-1, "")
        f.last_request = condensed if not dl.is_ack(cleaned) else f.last_request
        f.final_text = ""  # a new message: an earlier answer no longer ends the conversation
        if kind == "task":  # in a prompt laid out under headings, the section that states the task
            f.tasks.append((self.seq, layout.without_headings(layout.task_section(cleaned) or cleaned)))
            rules = dl.task_rules(cleaned)
            f.instructions |= {clip(r) for r in set(rules) - set(dl.task_rules(cleaned, instructions=False))}
            self.rules(rules + dl.example_rules(text))
            f.decisions += [Decision(f'"{c}"', self.seq, "user") for c in dl.user_choices(cleaned)]
        elif kind == "correction":
            f.corrections.append((self.seq, cleaned))
            self.rules(dl.correction_rules(cleaned))
            self.reject(cleaned, after_proposal)
            self.awaiting_adoption = True
        elif kind == "rule":  # a short message is a rule as a whole; a long one by its rule sentences
            self.rules(dl.constraint_sentences(cleaned) or ([cleaned] if len(cleaned.split()) <= 30 else []))
        elif kind == "direction":
            self.rules(dl.constraint_sentences(cleaned))
            f.decisions.append(Decision(f'"{clip(cleaned, MAX_QUOTE)}"', self.seq, "user"))
        else:  # a question or a request to look: not work, but a rule said along with it holds
            self.rules(dl.constraint_sentences(cleaned, skip_first=True))
        # questions and requests to look at something: asked in passing, not work; what the next
        # read-only command shows answers them
        self.tools.asked = kind == "look"

    def command_invoked(self, invocation: str) -> None:
        """A slash command with short arguments: a request of its own, whatever it says."""
        f = self.f
        f.said.append((self.seq, f"`{invocation}`", 1))
        f.last_request, f.last_user_seq, f.recent_steps, f.final_text = f"`{invocation}`", self.seq, [], ""
        self.last_said = ""

    def skill_loaded(self, name: str, instructions: str) -> None:
        """A skill the user invoked: what it is for (its opening) is the task when nothing else is; its
        rules hold for the work."""
        f = self.f
        cleaned = dl.unwrapped(dl.clean_user_text(instructions)[0])
        about = " ".join(sentences(layout.without_headings(cleaned))[:2])
        if not f.tasks and about:
            f.tasks.append((self.seq, f"Run the `{name}` skill: {clip(about, 300)}"))
        self.rules(dl.task_rules(cleaned, instructions=False) + dl.example_rules(instructions))
        f.said.append((self.seq, f"(the `{name}` skill's instructions were loaded)", 0))

    def rules(self, found: list[str]) -> None:
        self.f.constraints.extend(found)
        for c in found:
            self.f.forbidden |= dl.forbidden_verbs(c)

    def reject(self, reply: str, after_proposal: bool) -> None:
        """A negating reply right after a proposal rejects it, for the reason the user gives; after
        actions, it corrects them (quoted word for word)."""
        f = self.f
        if after_proposal:
            proposal = self.last_assistant_text
            prose = [s for s in sentences(proposal) if not dl.NARRATION.match(s) and not s.endswith(":")]
            steps = dl.plan_items(proposal)
            # what was put forward: its stated choice, else its steps, else the offer it closed with
            offer = replies.closing_offer(proposal)
            key = next(iter(dl.decision_sentences(proposal)), None) or (
                "; ".join(steps[:3]) if len(steps) >= 2 else None) or offer or next(
                (s for s in prose if dl.PROPOSAL.search(s)), prose[0] if prose else "")
            code = [c for c in re.findall(r"`[^`\n]{2,40}`", proposal) if c.strip("`") not in reply][:5]
            code = [] if key == offer and "`" in key else code  # the offer and what it follows name it already
            text = clip(key, 300) + (f" ({', '.join(code)})" if code else "")
            if f.plan_seq == f.last_assistant_seq:
                f.plan, f.plan_accepted = [], False  # the rejected plan is no longer the plan
            f.recaps = [r for r in f.recaps if r[0] != f.last_assistant_seq]  # what it put forward was not done
            f.decisions = [d for d in f.decisions if d.seq != f.last_assistant_seq or d.kind != "assistant"]
            f.decisions.append(Decision(text, f.last_assistant_seq, "rejected", dl.user_reason(reply)))
        else:
            f.decisions.append(Decision(f'"{clip(reply, MAX_QUOTE)}"', self.seq, "user"))

    def user_command(self, command: str, rest: str) -> None:
        call = Call("bash", {"command": command}, self.seq)
        if interrupted(rest):
            return
        if re.search(r"Command exited with code [1-9]", rest):
            self.tools.failure(call, error_line(rest), rest)
        else:
            resolve_by_success(self.f.failures, call)
            self.tools.success(call, rest)

    # -- the assistant -------------------------------------------------------------------------
    def assistant(self, content: list[Any]) -> None:
        f = self.f
        texts, calls = [], []
        for block in content:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "text" and block.get("text", "").strip():
                texts.append(block["text"].strip())
            elif block.get("type") == "toolCall":
                args = block.get("arguments") if isinstance(block.get("arguments"), dict) else {}
                call = Call(str(block.get("name", "tool")).lower(), args, self.seq)
                if call.name in _TODO_TOOLS:
                    self.todos(args)
                cid = str(block.get("id", f"call{self.seq}"))
                self.calls[cid] = call
                self.open_calls[cid] = call
                calls.append(call)
        joined = "\n".join(texts)
        if joined:
            self.prose(joined, ends_turn=not calls)
        f.ends_mid_work = bool(calls)
        f.final_text = "" if calls else joined
        f.last_assistant_seq = self.seq
        if texts and sentences(texts[-1]):
            self.last_said = clip(sentences(texts[-1])[0].rstrip(":"), 200)
        if calls:
            doing = ", ".join(dict.fromkeys(f"{c.name} {c.path}" if c.path else c.short() for c in calls[:3]))
            f.last_step = " — ".join(x for x in (self.last_said, doing) if x)
            f.last_calls = doing
        if texts and self.seq > f.last_user_seq:  # what the agent said it was doing since the last request
            f.recent_steps = (f.recent_steps + [s for s in dl.intentions(joined)])[-3:]
            claim = dl.done_claim(joined)
            if not dl.only_checking(joined):  # more work announced: whatever was said finished is not the end
                f.claimed_done = (-1, "")
            elif claim:
                f.claimed_done = (self.seq, claim)

    def prose(self, text: str, *, ends_turn: bool) -> None:
        """What the assistant's own words carry: choices, findings, fixes it reports, plans, recaps."""
        f = self.f
        f.narration.append(text)
        f.mentions.extend(FUNC.findall(text))
        self.last_assistant_text = text
        if self.awaiting_adoption:  # the reply to a correction: the approach taken instead
            adopted = dl.substance(text)
            if len(adopted) >= 20:
                f.decisions.append(Decision(adopted, self.seq, "adopted"))
            self.awaiting_adoption = False
        else:
            f.decisions.extend(Decision(s, self.seq) for s in dl.decision_sentences(text))
        f.findings.extend(dl.finding_sentences(text) + dl.listed_findings(text))
        if not ends_turn:  # mid-work, what the agent marks as a finding (a closing reply's points are its recap)
            f.findings.extend(labelled(text))
        said = [s for s in sentences(text) if not dl.NARRATION.match(s) and len(s) >= 25 and not s.endswith(":")]
        for x in f.failures:  # the agent's explanation after a failure: a finding, or words that name it
            if x.diagnosis or x.resolved or not said:
                continue
            named = {w.lower().strip("`'\"():,.") for w in x.line.split() if len(w) >= 5}
            about = [s for s in said if dl.finding_sentences(s) or named & {w.lower().strip("`'\"():,.") for w in s.split()}]
            if about:  # the sentence that names it, and the one after it (often what to do about it)
                i = said.index(about[0])
                x.diagnosis = clip(" ".join(said[i:i + 2]), 300)
        workaround = next((s for s in sentences(text) if dl.WORKAROUND.search(s)), None)
        last = f.failures[-1] if f.failures else None
        if workaround and last and not last.resolved and last.seq == self.seq - 1:
            # right after a failure the agent turns to another way: the failure is worked around
            last.resolved = True
            last.diagnosis = last.diagnosis or clip(workaround.rstrip(":"), 200)
        gone = f.missing[-1] if f.missing else None
        if workaround and gone and gone.seq == self.seq - 1:
            gone.instead = clip(workaround.rstrip(":"), 200)
        for s in sentences(text):
            resolve_by_claim(f.failures, s)
        steps = dl.plan_items(text)
        if len(steps) >= 2 and ends_turn and dl.PROPOSAL.search(text):
            f.plan, f.plan_seq, f.plan_accepted = steps, self.seq, False
        elif len(steps) >= 2 and not ends_turn:  # steps the agent set out and went on to carry out
            f.working_plan, f.working_plan_seq = steps, self.seq
        if ends_turn and len(text) >= 80:
            f.recaps.append((self.seq, dl.recap_items(text)))

    def todos(self, args: dict[str, Any]) -> None:
        """The agent's task list, rewritten whole by each call: the latest one is the state of the work."""
        items = args.get("todos") or args.get("plan") or []
        if isinstance(items, list):
            todos = [(str(t.get("status", "pending")), clip(str(t.get("content") or t.get("step") or ""), 200))
                     for t in items if isinstance(t, dict)]
            self.f.todos = [(st, c) for st, c in todos if c]

    # -- tool results --------------------------------------------------------------------------
    def result(self, msg: dict[str, Any]) -> None:
        cid = str(msg.get("toolCallId", ""))
        call = self.calls.get(cid) or Call(str(msg.get("toolName", "tool")).lower(), {}, self.seq)
        self.open_calls.pop(cid, None)
        text = strip_injected(text_of(msg.get("content")))
        if interrupted(text):
            self.f.stopped_seq = self.seq
            return
        asked_by_last = call.seq == self.f.last_assistant_seq
        self.f.unreported = ""
        if asked_by_last and call.command and call.name not in _EDIT_TOOLS and not msg.get("isError"):
            self.f.unreported = printed_head(call.command, text)
        call.seq = self.seq
        said = declined(text)
        if said is not None:  # the user said no at the permission prompt: a rejection, not an error
            self.declined(call, said)
            return
        if call.name in _TODO_TOOLS:
            listed = checklist(text)
            if listed and not self.f.todos:  # the list as the tool showed it, when its arguments do not carry it
                self.f.todos = listed
            return
        if call.name in _PLAN_TOOLS:
            self.plan_presented(call)
            return
        if call.name in _AGENT_TOOLS:
            self.agent_report(call, text)
            return
        if call.name in _ASK_TOOLS:
            self.answered(call, text)
            return
        command_like = call.name not in READ_ONLY_TOOLS and call.name not in _EDIT_TOOLS
        if msg.get("isError") or (command_like and (looks_failed(text) or envelope_failed(text))):
            text = without_envelope(text)
            self.tools.failure(call, error_line(text), text)
            return
        switched = resolve_by_success(self.f.failures, call)
        if switched:
            self.f.decisions.append(Decision(switched, self.seq, "switch"))
        if call.name in _EDIT_TOOLS and call.path:
            self.edited(call)
            return
        self.tools.success(call, text)

    def declined(self, call: Call, said: str) -> None:
        f = self.f
        what = dl.plan_text(str(call.args.get("plan", ""))) if call.name in _PLAN_TOOLS else call.short()
        reason = clip(said, 450) if said else ""
        f.decisions.append(Decision(clip(what, 300), self.seq, "rejected", reason))
        if call.name in _PLAN_TOOLS and f.plan_seq == call.seq:
            f.plan, f.plan_accepted = [], False
        if said:  # what the user typed at the prompt is a message of theirs
            self.prev_role = ""
            self.user(said)

    def plan_presented(self, call: Call) -> None:
        """A plan the harness put to the user and the user approved: the call's plan, else the plan the
        assistant wrote out just before asking."""
        f = self.f
        plan = str(call.args.get("plan") or "") or (self.last_assistant_text if len(self.last_assistant_text) >= 200 else "")
        steps = dl.plan_steps(plan, 10)
        if steps:
            f.plan, f.plan_seq, f.plan_accepted = steps, self.seq, True
        bounds = dl.plan_rules(plan)
        if bounds:  # what the plan rules out or keeps, accepted with it
            f.constraints.append(clip("Agreed with the plan: " + "; ".join(bounds), 400))
        title = dl.plan_title(plan)
        f.decisions.append(Decision("**Plan approved by the user**" + (f": {title}" if title else ""), self.seq, "switch"))

    def answered(self, call: Call, text: str) -> None:
        """The user's answers to the questions the agent asked: decisions, with the options not taken."""
        options: dict[str, list[str]] = {}
        for q in call.args.get("questions") or []:
            if isinstance(q, dict):
                labels = [str(o.get("label", "")) + (f" ({clip(str(o['description']), 80)})" if o.get("description") else "")
                          for o in q.get("options") or [] if isinstance(o, dict)]
                options[str(q.get("question", ""))] = [lb for lb in labels if lb]
        pairs = dl.answers(text)
        if not pairs:  # the answer as plain text: put to the questions the call asked
            options = options or replies.questions_in("\n".join(str(v) for v in call.args.values()))
            answer = re.sub(r"^\W*(?:the )?(?:user(?:'s)? )?answer(?:ed|s)?\W*", "", re.sub(r"[*_]{2}", "", text.strip()), flags=re.I)
            if answer and options:
                joined = "; ".join(options)
                options = {joined: [o for opts in options.values() for o in opts]}
                pairs = [(joined, answer)]
        for question, answer in pairs:
            others = [o for o in options.get(question, []) if not o.startswith(answer) and o.split(" (")[0] not in answer]
            line = f"**User chose** “{clip(answer, 200)}” for: {clip(question, 160)}"
            if others:
                line += " (options not chosen: " + "; ".join(clip(o, 80) for o in others[:5]) + ")"
            self.f.decisions.append(Decision(line, self.seq, "switch"))
            self.f.said.append((self.seq, clip(f"{answer} (answering: {question})", 320), 2))

    def agent_report(self, call: Call, report: str) -> None:
        """A sub-agent's report: what it found is a finding of the work."""
        task = clip(str(call.args.get("description") or call.args.get("prompt") or "sub-task"), 80)
        points = dl.recap_items(report, 3)
        if points:
            self.f.findings.append(clip(f"{task}: " + " ".join(points), 400))

    def edited(self, call: Call) -> None:
        f = self.f
        path = call.path
        assert path is not None
        created = _created_by_patch(call.args)  # a patch that adds every line writes a new file
        verb = "Wrote" if call.name in ("write", "create") or created is not None else "Edited"
        change = f.changes.get(path)
        if change is None or (verb == "Wrote" and change.verb == "Edited" and change.count == 0):
            change = f.changes[path] = Change(path, verb)
            f.done.append((self.seq, "edit", path))
        if verb == "Wrote":
            describe_write(change, created if created is not None else str(call.args.get("content", "")))
        else:
            for old, new in _replacements(call.args):
                describe_edit(change, old, new)
        if path not in f.touched:
            f.touched.append(path)
        if path not in f.modified:
            f.modified.append(path)
        if path not in f.uncommitted:
            f.uncommitted.append(path)
        f.last_edit_seq = self.seq
        if not path.lower().endswith((".md", ".mdx", ".rst", ".txt")):
            f.last_code_edit_seq = self.seq

    def finish(self) -> Facts:
        f = self.f
        f.root = project_root([*f.modified, *f.read])
        show = shortener(f.root)
        f.done = [item for s, k, t in f.done for item in (
            [(s, k, f.changes[t].line(show)), *((s, "digest", f"{t.rsplit('/', 1)[-1]} — {d}") for d in f.changes[t].digest)]
            if k == "edit" else [(s, k, t)])]
        unreject_carried_out(f.decisions, f.done)
        if not self.tools.committed_once:
            f.uncommitted = []
        # Only the newest assistant message can still be waiting for results.
        waiting = [c for c in self.open_calls.values() if c.seq == f.last_assistant_seq]
        f.pending = [f"{describe(c)} (no result yet)" for c in waiting if c.name not in (*_ASK_TOOLS, *_PLAN_TOOLS)]
        f.asked = [q for c in waiting if c.name in _ASK_TOOLS for q in _questions(c)]
        for c in (c for c in waiting if c.name in _PLAN_TOOLS):  # a plan put up for approval, not yet approved
            plan = str(c.args.get("plan") or "") or self.last_assistant_text
            f.awaiting_approval = dl.plan_title(plan) or "the plan"
            f.plan, f.plan_seq, f.plan_accepted = dl.plan_steps(plan, 10) or f.plan, f.last_assistant_seq, False
        f.constraints = dedupe(clip(s) for s in f.constraints)
        f.mentions = dedupe(f.mentions)
        f.findings = dedupe(clip(s, 300) for s in f.findings)
        return f


_CHECKBOX = re.compile(r"^\s*(?:[-*]\s+)?(?:(?P<done>☒|☑|✅|✔|\[[xX]\])|(?P<open>☐|◻|□|\[ \]))\s*(?P<item>\S.*)$")


def checklist(text: str) -> list[tuple[str, str]]:
    """A task list shown as checkboxes (☒ done, ☐ open): (status, item) per line, '' when it is not one."""
    found = [m for m in (_CHECKBOX.match(ln) for ln in text.splitlines()) if m]
    if len(found) < 2:
        return []
    return [("completed" if m.group("done") else "pending", clip(m.group("item").strip(), 200)) for m in found]


def printed_head(command: str, output: str) -> str:
    """What a command printed, as one line: its first lines of text (markup comments and rules
    dropped), for the result the agent had in hand but had not yet reported when the region ends."""
    lines = [ln.strip() for ln in re.sub(r"<!--.*?-->", "", without_envelope(output), flags=re.DOTALL).splitlines()]
    lines = [ln for ln in lines if re.search(r"\w", ln) and not ln.startswith("Command exited with code")]
    if not lines:
        return ""
    return f"`{clip(command, 100)}` printed: " + clip(" | ".join(" ".join(ln.split()) for ln in lines[:8]), 400)


def _questions(call: Call) -> list[str]:
    """The questions an ask-the-user call puts, each with its options."""
    out = []
    for q in call.args.get("questions") or []:
        if isinstance(q, dict) and q.get("question"):
            labels = [str(o.get("label", "")) for o in q.get("options") or [] if isinstance(o, dict) and o.get("label")]
            out.append(clip(str(q["question"]), 200) + (f" (options: {', '.join(clip(lb, 60) for lb in labels[:5])})"
                                                        if labels else ""))
    return out or [clip(describe(call), 200)]


def after_proposal_reply(p: _Pass, reply: str) -> bool:
    """The reply comes right after an assistant proposal and declines it."""
    return p.prev_role == "assistant" and bool(dl.PROPOSAL.search(p.last_assistant_text)) and dl.refuses(reply)


def _patch_sides(patch: str) -> list[tuple[str, str]]:
    """(old, new) text of each hunk of a patch given as +/-/space lines (a unified diff's hunks, or the
    body of an apply_patch call)."""
    hunks: list[tuple[list[str], list[str]]] = [([], [])]
    for line in patch.splitlines():
        if line.startswith("@@"):
            hunks.append(([], []))
        elif line.startswith(("+++", "---", "***", "diff ", "index ")):
            continue
        elif line.startswith("+"):
            hunks[-1][1].append(line[1:])
        elif line.startswith("-"):
            hunks[-1][0].append(line[1:])
        else:
            body = line[1:] if line.startswith(" ") else line
            hunks[-1][0].append(body)
            hunks[-1][1].append(body)
    return [("\n".join(o), "\n".join(n)) for o, n in hunks if o or n]


def _created_by_patch(args: dict[str, Any]) -> str | None:
    """The content of a file a patch creates whole (every line added), else None."""
    patch = args.get("patch") if isinstance(args.get("patch"), str) else None
    if not patch:
        return None
    sides = _patch_sides(patch)
    if len(sides) == 1 and not sides[0][0].strip():
        return sides[0][1]
    return None


def _replacements(args: dict[str, Any]) -> list[tuple[str, str]]:
    """(old, new) pairs of an edit call, whichever argument names the tool uses."""
    if isinstance(args.get("patch"), str) and not any(k in args for k in ("oldText", "old_string", "old_str", "edits")):
        return _patch_sides(args["patch"])
    edits = args.get("edits")
    if isinstance(edits, list):
        return [(str(e.get("oldText", e.get("old_string", ""))), str(e.get("newText", e.get("new_string", ""))))
                for e in edits if isinstance(e, dict)]
    old = args.get("oldText", args.get("old_string", args.get("old_str", "")))
    new = args.get("newText", args.get("new_string", args.get("new_str", "")))
    return [(str(old or ""), str(new or ""))]


__all__ = ["Facts", "collect"]
