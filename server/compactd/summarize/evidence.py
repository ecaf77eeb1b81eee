"""Evidence for the extractive summarizer: what happened in a conversation, read from its messages.

One pass over the convertToLlm messages collects, in order:

- the user's messages, classified: a *task* (asks for work), a *correction* (rejects what the
  assistant proposed or did: "no, ...", "wait, ...", "actually ..."), a *direction* (steers
  without rejecting: "can't we ...", "why not ...?"), a *question*, an *acknowledgement* or an
  aside. Pasted material (fenced blocks, JSON lines, stack frames) is cut out first; error lines
  quoted by the user are kept verbatim as evidence of their own;
- the user's standing rules (constraints), from tasks, corrections and directions;
- the assistant's stated choices (decisions); a correction marks the earlier choices it talks
  about as rejected, and the assistant's next reply as the approach adopted instead;
- tool calls and results: edits and writes, commits (with their messages), renames and
  deletions done with `mv`/`git mv`/`rm`/`git rm`, checks (test, lint, build commands), other
  commands. Interruptions ("Command aborted", cancelled commands) are neither work nor errors;
- failures, and whether a later success of the same call or of the same command family
  (`npm run check`, `python -m pytest`, `ruff` ...) resolved them.

Everything is copied verbatim (paths, commands, error lines, quotes); long texts are clipped.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "CONSTRAINT_RE",
    "TYPED_ERROR_RE",
    "Evidence",
    "collect",
    "clip",
    "first_line",
    "error_line",
    "looks_failed",
    "sentences",
    "text_of",
]

MAX_ITEM = 400
MAX_QUOTE = 500

# -- text helpers ------------------------------------------------------------------------------


def clip(text: str, limit: int = MAX_ITEM) -> str:
    text = " ".join(text.split()) if "\n" in text else text.strip()
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text")
    return ""


_CODE_LINE = re.compile(r"^(?://|/\*|\*|#!|[{}()\]\[;]|this\.|const |let |import |export |return |def |class )|[;{]\s*$")


def sentences(text: str) -> list[str]:
    """Prose sentences of a text: fenced blocks and lines that look like code are skipped."""
    out = []
    fenced = False
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("```"):
            fenced = not fenced
            continue
        if fenced or not line or _CODE_LINE.search(line):
            continue
        out.extend(s.strip() for s in re.split(r"(?<=[.!?])\s+(?=[\w`\"'(\[])", line) if s.strip())
    return out


def first_line(text: str) -> str:
    for line in text.splitlines():
        if line.strip():
            return line.strip()
    return ""


TYPED_ERROR_RE = _TYPED_ERROR = re.compile(
    r"(?:^|\s)(?:(?:[A-Z]\w*)?(?:Error|Exception)|error(?:\[\w+\])?|error TS\d+|fatal|FAIL(?:ED)?|panic)\b\s*:"
    r"|npm ERR!|command not found|No such file or directory"
    r"|^\S+\.\w+:\d+(?::\d+)?:\s",  # path:line: diagnostics of compilers and linters
)
_GENERIC_ERROR = re.compile(
    r"error|exception|failed|failure|fatal|not found|denied|cannot|can't|invalid|undefined|refused|"
    r"timed out|exited with code [1-9]",
    re.IGNORECASE,
)
_EXIT_LINE = re.compile(r"^Command exited with code \d+$")


def error_line(text: str) -> str:
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
    return first_line(text) or "(no output)"


def looks_failed(text: str) -> bool:
    """Unmistakable failure text in a result that was not flagged isError (commands only)."""
    head = text[:4000]
    return bool(
        re.search(r"Command exited with code [1-9]\d*\s*$", text.strip())
        or re.search(r"^(?:error|fatal)(?:\[\w+\])?:", head, re.IGNORECASE | re.MULTILINE)
        or "Traceback (most recent call last)" in head
        or re.search(r"command not found|npm ERR!", head)
    )


def _interrupted(text: str) -> bool:
    t = text.strip()
    return t in ("Command aborted", "Aborted", "Request was aborted.") or "(command cancelled)" in t[:200]


# -- commands ----------------------------------------------------------------------------------

_READ_ONLY_TOOLS = {
    "read", "grep", "find", "ls", "glob", "search", "rg", "list", "view", "cat", "web_search", "fetch",
    "webfetch", "todo_read", "todoread",
}
# Shell commands that only look at things: not progress, and their "failures" (grep: no match) are noise.
_READ_ONLY_COMMANDS = {
    "grep", "rg", "ag", "ls", "cat", "head", "tail", "find", "fd", "wc", "echo", "pwd", "which", "tree", "stat",
    "file", "less", "more", "du", "df", "env", "printenv", "type", "sed", "awk", "jq", "diff", "nl", "sort",
    "uniq", "cut", "open", "code", "sleep", "true", "date",
}
_READ_ONLY_GH = {"view", "list", "status", "diff", "checks"}
_READ_ONLY_GIT = {"status", "log", "diff", "show", "branch", "blame", "grep", "ls-files", "rev-parse", "fetch"}
_CHECK = re.compile(
    r"^(?:npm (?:run )?(?:check|test|lint|build|typecheck)|pnpm (?:run )?\w+|yarn (?:run )?\w+|npx (?:tsc|tsgo|vitest|jest|"
    r"eslint|biome)|tsc|tsgo|pytest|python3? -m (?:pytest|mypy|ruff|unittest)|ruff|mypy|cargo (?:check|test|build|clippy)|"
    r"go (?:test|build|vet)|make(?: \w+)?|uv run \w+)\b"
)
_SEGMENT_SPLIT = re.compile(r"&&|\|\||;|\n")


def _unquoted(command: str) -> str:
    return re.sub(r"'[^']*'|\"(?:[^\"\\]|\\.)*\"", "''", command)  # a quoted `|` is not a pipe


def _segments(command: str) -> list[str]:
    """The commands of a shell line: `cd` steps, comments and pipes' later stages dropped."""
    out = []
    for seg in _SEGMENT_SPLIT.split(_unquoted(command)):
        seg = seg.split("|")[0].strip()
        seg = re.sub(r"\s+\d?>\s*\S+|\s+2>&1", "", seg).strip()
        if not seg or seg.startswith("#") or seg.split()[0] == "cd":
            continue
        out.append(seg)
    return out


def is_read_only_command(command: str) -> bool:
    for seg in _segments(command):
        w = seg.split()
        if w[0] == "git" and len(w) > 1 and w[1] in _READ_ONLY_GIT:
            continue
        if w[0] == "gh" and len(w) > 2 and w[2] in _READ_ONLY_GH:
            continue
        if w[0] == "sed" and "-i" in w:
            return False
        if "--help" in w or "--version" in w:
            continue
        if w[0] not in _READ_ONLY_COMMANDS:
            return False
    return True


def command_family(command: str) -> str | None:
    """The check a command runs (`npm run check`, `python -m pytest`, `ruff` ...), or None."""
    for seg in _segments(command):
        seg = re.sub(r"^(?:\w+=\S+\s+)+", "", seg)  # VAR=value prefixes
        m = _CHECK.match(seg)
        if m:  # `python -m pytest` and `pytest` are the same check
            return re.sub(r"^(?:python3? -m|uv run|npx) ", "", m.group(0))
    return None


def _commit_message(command: str) -> str | None:
    m = re.search(r"git commit\b[^\n]*?(?:-m|--message)\s+(\"(?:[^\"\\]|\\.)*\"|'[^']*')", command)
    if not m:
        return None
    raw = m.group(1)[1:-1]
    return raw.replace('\\"', '"').split("\n")[0].strip() or None


def _cwd_of(command: str) -> str | None:
    m = re.match(r"\s*cd\s+(\S+)\s*(?:&&|;|\n)", command)
    return m.group(1).strip("'\"") if m else None


def _words(segment: str) -> list[str]:
    try:
        return shlex.split(segment, comments=True)
    except ValueError:
        return segment.split()


def file_moves(command: str) -> tuple[list[tuple[str, str]], list[str]]:
    """(renames, deletions) a shell line performs with mv / git mv / rm / git rm."""
    renames: list[tuple[str, str]] = []
    deleted: list[str] = []
    cwd = _cwd_of(command)
    for seg in re.split(r"&&|;|\n", command):
        w = _words(seg.strip())
        if not w:
            continue
        if w[0] == "git" and len(w) > 1 and w[1] in ("mv", "rm"):
            w = w[1:]
        if w[0] not in ("mv", "rm", "rmdir") or any(ch in seg for ch in "$`"):
            continue
        args = [a for a in w[1:] if not a.startswith("-") and not re.match(r"^\d?>", a)]
        if w[0] in ("rm", "rmdir"):
            deleted.extend(a for a in args if a not in ("/dev/null",))
        elif len(args) >= 2:
            *sources, dest = args
            for src in sources:
                target = dest
                if dest in (".", "./"):  # into the working directory (named when a `cd` says which)
                    target = (f"{cwd.rstrip('/')}/" if cwd else "") + src.rstrip("/").split("/")[-1]
                elif dest.endswith("/") or len(sources) > 1:
                    target = f"{dest.rstrip('/')}/{src.rstrip('/').split('/')[-1]}"
                renames.append((src, target))
    return renames, deleted


# -- user messages -----------------------------------------------------------------------------

_ACK = re.compile(
    r"^(?:y|yes|yeah|yep|yo|ok|okay|k|sure|thanks|thank you|thx|go|go ahead|continue|proceed|do it|please do|"
    r"sounds good|great|nice|cool|perfect|lgtm|next|done|no|nope|wow|alright|good|right|hm+)[.!]*$",
    re.IGNORECASE,
)
_CORRECTION = re.compile(
    r"^(?:(?:no|nope|nah)(?:\s*[,.!:;—-]|\s+(?:that|this|it|way|don't|not)\b)|wait\b|actually\b|hm+\b|scratch that|"
    r"stop\b|undo\b|revert\b|not what i|that's (?:wrong|not)|"
    r"wrong\b|you (?:fucked|broke|messed))"
    r"|doesn't look right|that's horrible|not what i (?:wanted|asked)|don't do that|i undid|"
    r"why would we|that's not it|how can you say|why do you|why did you|you haven't|you didn't",
    re.IGNORECASE,
)
_DIRECTION = re.compile(
    r"\b(?:can't we|couldn't we|shouldn't we|why not|why don't we|wouldn't it|i would think|i think we should|"
    r"how about|what about|why are we using|i would assume|i'd rather|slight steering)\b",
    re.IGNORECASE,
)
_ACTION = re.compile(
    r"\b(?:add|fix|implement|create|write|wrie|make|remove|delete|rename|move|update|refactor|read|review|check|run|"
    r"commit|push|open|change|use|port|investigate|look|explain|tell|build|test|document|clean|split|copy|revert|"
    r"set|tackle|support|handle|release|merge|deduplicate|reorganize|migrate|install|profile|speed|tone|adjust|"
    r"modify|replace|extract|convert|analy[sz]e|plan|propose|suggest|show|print|output|close|comment|publish|"
    r"cache|filter|retry|limit|expose|accept|detect|parse|validate|rewrite|wire|drop|keep|finish|start|try)\b",
    re.IGNORECASE,
)
_REQUEST_QUESTION = re.compile(
    r"^(?:\W*(?:ok|okay|alright|so|and|also|btw|hey|then|now)\W+)*(?:can|could|would|will) (?:you|we)\b", re.I)
CONSTRAINT_RE = _CONSTRAINT = re.compile(
    r"\b(?:must|mustn't|should(?:n't)? (?:not |never |always |only |stay|keep|be)|don't|do not|never|always|"
    r"prefer|preferably|avoid|make sure|ensure|only (?:use|want|e2e)|i (?:only )?want|no more than|at most|"
    r"at least|no new|no \w+ calls|surgical|required|backwards compatible|compatible with)\b"
    r"|^(?:keep|no|never|always|only|don't|do not|avoid|stick to|please don't|plase don't)\b",
    re.IGNORECASE,
)
_LIST_MARK = re.compile(r"^\s*(?:[-*+]\s+(?:\[[ xX]\]\s+)?|\d+[.)]\s+)")
_PASTE_LINE = re.compile(r"^\s*(?:[{\[].*[}\]],?|at \S.*|node:\S.*|Node\.js v\S+|\^+|\S+@\S+ \S+|➜.*|~/\S.*|\w+: '.*',?|"
                         r"\w+: -?\d+,?|[}\]],?)\s*$")
_BASH_USER = re.compile(r"^Ran `(?P<cmd>[^\n]*)`\n(?P<rest>.*)$", re.DOTALL)
_SUMMARY_BLOCK = re.compile(r"<summary>\n?(.*?)\n?</summary>", re.DOTALL)
_FILLER = re.compile(
    r"^(?:you're (?:absolutely )?right|right|good (?:catch|point|idea)|got it|understood|yes|ok(?:ay)?|sure|great|done|"
    r"excellent|perfect|thanks|i see|makes sense|that makes (?:more )?sense)\b[^.!:]*[.!:]?\s*",
    re.IGNORECASE,
)


def _clean_user_text(text: str) -> tuple[str, list[str]]:
    """(text without pasted material, error lines quoted in it)."""
    errors: list[str] = []
    lines = text.splitlines()
    kept: list[str] = []
    in_fence = False
    i = 0
    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        if stripped.startswith("```"):
            in_fence = not in_fence
            i += 1
            continue
        if _TYPED_ERROR.search(stripped) and re.search(r"\b(?:Error|error)\b", stripped):
            block = [stripped]
            while i + 1 < len(lines) and lines[i + 1].strip() and not re.match(r"\s*at\s", lines[i + 1]) \
                    and len(block) < 6 and not lines[i + 1].strip().startswith("```"):
                i += 1
                block.append(lines[i].strip())
            errors.append(clip(" ".join(block), MAX_ITEM))
            i += 1
            continue
        if in_fence or _PASTE_LINE.match(line):
            i += 1
            continue
        kept.append(line)
        i += 1
    return "\n".join(kept).strip(), errors


_IMPERATIVE = re.compile(r"^(?:\W*(?:ok|okay|alright|so|now|then|please|also)\W+)*" + _ACTION.pattern, re.IGNORECASE)
def _clauses(sentence: str) -> list[str]:
    return [c.strip() for c in re.split(r"[;:]\s+|,\s+(?:and\s+|then\s+)?", sentence) if c.strip()]


_RULE_START = re.compile(
    r"^(?:\W*(?:ok|okay|please|also|and)\W+)*(?:keep|no|never|always|only|don't|do not|avoid|stick to|make sure|"
    r"ensure)\b", re.IGNORECASE)
_CONTINUE = re.compile(r"^(?:continue|go on|keep going|carry on|proceed)\b", re.IGNORECASE)


def _rule_like(sentence: str) -> bool:
    """A sentence that states a rule: a clause of it starts with one, or its rule word comes early
    (not a task that happens to mention one)."""
    if any(_RULE_START.match(c) for c in _clauses(sentence)):
        return True
    m = _CONSTRAINT.search(sentence)
    return bool(m) and len(sentence[: m.start()].split()) <= 5


_ASIDE = re.compile(r"^(?:ignore (?:that|this|it)|never ?mind|nvm|lol|haha)\b", re.IGNORECASE)


def classify_user(text: str) -> str:
    """task | rule | correction | direction | question | ack (acknowledgements, praise, asides)."""
    t = text.strip()
    flat = " ".join(t.split())
    words = len(flat.split())
    if not flat or _ACK.match(flat) or _ASIDE.match(flat) or (words <= 3 and not re.search(r"[/`.@]\w", flat)):
        return "ack"
    if _CORRECTION.search(flat[:200]):
        return "correction"
    if _DIRECTION.search(flat):
        return "direction"
    parts = sentences(t) or [flat]
    imperative = any(_IMPERATIVE.match(c) and not _RULE_START.match(c) for p in parts for c in _clauses(p))
    if parts[0].endswith("?") and not _REQUEST_QUESTION.match(parts[0]) and not imperative:
        return "question"
    if not imperative and any(_rule_like(p) for p in parts):
        return "rule"  # only states how things must be done
    if words <= 6 and not re.search(r"[/`@]\w|\w\.\w", flat):
        return "ack"  # a short reply to the assistant ("yes need to be fully clean")
    if _CONTINUE.match(flat):
        return "ack"  # "continue ...": more of the same task, not a new one
    if _ACTION.search(flat) or words >= 8:
        return "task"
    return "question" if "?" in flat else "ack"




def constraint_sentences(text: str, *, skip_first: bool = False) -> list[str]:
    """The user's rules in a message; the opening ask of a task (an imperative) is not a rule."""
    out = []
    for n, s in enumerate(sentences(text)):
        s = _LIST_MARK.sub("", s).strip()
        if n == 0 and (skip_first or _IMPERATIVE.match(s)) or "instead" in s.lower():
            continue
        if len(s.split()) < 3 or len(s) > 300 or s.endswith("?") or s.endswith(":"):
            continue
        if _CONSTRAINT.search(s) or any(_RULE_START.match(c) for c in _clauses(s)):
            out.append(s)
    return out


# -- decisions ---------------------------------------------------------------------------------

_DECISION = re.compile(
    r"\b(?:decided|decide to|decision|instead of|rather than|chose|choose|chosen|going with|go with|opted|"
    r"switch(?:ed)? to|will use|I'll use|we'll use|settled on|approach is|plan is|the fix is|fix is simple|"
    r"I'll implement|implement it with|the solution is|we should use|better approach)\b",
    re.IGNORECASE,
)
_PROPOSAL = re.compile(
    r"\b(?:propos|suggest|plan\b|structure|approach|option|should I|shall I|want me to|I'll|I will|we could|"
    r"the fix|fix is)", re.IGNORECASE)
_NARRATION = re.compile(r"^(?:let me|let's|now (?:let|I)|first,? (?:let|I)|I'll now|next,? (?:let|I))\b", re.I)
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]{3,}")
_STOP = {
    "this", "that", "with", "from", "have", "what", "when", "then", "them", "they", "there", "their", "would",
    "should", "could", "just", "into", "which", "were", "will", "your", "about", "because", "only", "also",
    "doesn", "look", "right", "thing", "think", "thought", "want", "need", "make", "like", "here", "some",
    "does", "done", "more", "than", "these", "those", "while", "where", "after", "before", "supposed", "concluded",
}


def _tokens(text: str) -> set[str]:
    """Word stems (first five letters) of words and camelCase parts, stop words removed: how a
    correction is matched with the choices it talks about ("appending" ~ "appendMessage")."""
    out = set()
    for w in _WORD.findall(text):
        parts = re.findall(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])", w) or [w]
        for p in [w, *parts]:
            p = p.lower()
            if len(p) >= 4 and p not in _STOP:
                out.add(p[:5])
    return out


def decision_sentences(text: str) -> list[str]:
    return [
        s for s in sentences(text)
        if _DECISION.search(s) and not _NARRATION.match(s) and not s.endswith(":") and len(s) >= 25
    ]


def _adopted(text: str) -> str:
    """The substance of a reply to a correction: filler dropped, list items joined."""
    parts = []
    for line in text.splitlines():
        line = _LIST_MARK.sub("", line.strip()).strip()
        if not line or line.startswith("```"):
            continue
        while True:
            shorter = _FILLER.sub("", line, count=1)
            if shorter == line:
                break
            line = shorter
        if line.endswith(":") and len(line.split()) <= 6:
            continue  # a lead-in to the list that follows ("We just want to:")
        if line and not _NARRATION.match(line) and not re.match(r"^(?:I (?:overcomplicated|misunderstood)|Let me)", line):
            parts.append(line.rstrip(":") if line.endswith(":") else line)
    return clip("; ".join(parts), MAX_ITEM)


# -- the pass ----------------------------------------------------------------------------------


@dataclass
class Call:
    name: str
    args: dict[str, Any]
    seq: int

    @property
    def command(self) -> str:
        return str(self.args.get("command", "")) if self.name in ("bash", "shell", "exec", "run", "terminal") else ""

    @property
    def path(self) -> str | None:
        p = self.args.get("path") or self.args.get("file_path") or self.args.get("file")
        return p if isinstance(p, str) and p else None

    @property
    def key(self) -> tuple[str, str]:
        return (self.name, self.command or self.path or "")

    def short(self) -> str:
        """How the call is named inside a sentence: the command, or the tool and its path."""
        if self.command:
            return f"`{clip(self.command, 160)}`"
        return f"{self.name} {self.path}" if self.path else self.name

    def read_only(self) -> bool:
        if self.name in _READ_ONLY_TOOLS:
            return True
        return bool(self.command) and is_read_only_command(self.command)


@dataclass
class Failure:
    call: Call
    line: str
    seq: int
    resolved: bool = False


@dataclass
class Decision:
    text: str
    seq: int
    kind: str = "assistant"  # assistant | rejected | user | adopted


@dataclass
class Evidence:
    tasks: list[tuple[int, str]] = field(default_factory=list)  # (seq, cleaned text)
    corrections: list[tuple[int, str]] = field(default_factory=list)
    constraints: list[str] = field(default_factory=list)
    user_errors: list[str] = field(default_factory=list)
    done: list[tuple[int, str, str]] = field(default_factory=list)  # (seq, kind, text)
    commits: list[str] = field(default_factory=list)
    failures: list[Failure] = field(default_factory=list)
    decisions: list[Decision] = field(default_factory=list)
    pending: list[str] = field(default_factory=list)
    modified: list[str] = field(default_factory=list)  # current names, rename-aware, deletions removed
    read: list[str] = field(default_factory=list)  # paths read with the read tool
    renamed: list[tuple[str, str]] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    uncommitted: list[str] = field(default_factory=list)  # edited since the last commit (when there was one)
    checks: dict[str, tuple[int, bool]] = field(default_factory=dict)  # family -> (seq of last run, passed)
    last_edit_seq: int = -1
    last_user_seq: int = -1
    first_user_raw: str | None = None  # the first user message, verbatim (the turn-prefix request)
    ends_mid_work: bool = False  # the last assistant message called tools (the work was cut off)
    final_text: str = ""  # the last assistant text when the conversation ends with an answer
    last_step: str = ""  # what the last assistant message was doing, when it called tools
    last_assistant_seq: int = -1
    narration: list[str] = field(default_factory=list)
    mentions: list[str] = field(default_factory=list)
    embedded: list[str] = field(default_factory=list)

    @property
    def errors(self) -> list[Failure]:
        return [f for f in self.failures if not f.resolved]

    @property
    def fixed(self) -> list[Failure]:
        return [f for f in self.failures if f.resolved]


_PATH = re.compile(
    r"(?<![\w@:/])(?:\.{0,2}/)?(?:[\w.@-]+/)+[\w.@-]*\w"
    r"|\b[\w-]+\.(?:py|pyi|ts|tsx|js|jsx|mjs|cjs|json|jsonl|md|go|rs|java|kt|c|h|cc|cpp|hpp|cs|rb|php|"
    r"swift|toml|yaml|yml|ini|cfg|sh|bash|zsh|txt|css|scss|html|sql|proto|lock|xml|vue|svelte)\b"
)
_FUNC = re.compile(r"\b[A-Za-z_][\w]*(?:\.[A-Za-z_]\w*)*\(\)")
_CODE = re.compile(r"`([^`\n]{2,80})`")


def collect(messages: list[dict[str, Any]]) -> Evidence:
    ev = _Pass()
    for msg in messages:
        ev.message(msg)
    return ev.finish()


class _Pass:
    def __init__(self) -> None:
        self.ev = Evidence()
        self.seq = 0
        self.calls: dict[str, Call] = {}
        self.pending: dict[str, Call] = {}
        self.successes: list[Call] = []
        self.last_assistant_seq = -1
        self.last_assistant_text = ""
        self.last_commit_seq = -1
        self.edit_counts: dict[str, int] = {}
        self.awaiting_adoption = False
        self.last_said = ""

    # -- users ---------------------------------------------------------------------------------
    def user(self, text: str) -> None:
        ev = self.ev
        blocks = _SUMMARY_BLOCK.findall(text)
        if blocks:
            ev.embedded.extend(blocks)
            return
        bash = _BASH_USER.match(text)
        if bash:  # the user's own `!command`
            call = Call("bash", {"command": bash.group("cmd")}, self.seq)
            rest = bash.group("rest")
            if _interrupted(rest):
                return
            if re.search(r"Command exited with code [1-9]", rest):
                self.failure(call, error_line(rest), rest)
            else:
                self.success(call, rest)
            return
        if ev.first_user_raw is None and text.strip():
            ev.first_user_raw = text.strip()
        cleaned, errors = _clean_user_text(text)
        ev.user_errors.extend(errors)
        kind = classify_user(cleaned)
        ev.mentions.extend(_PATH.findall(cleaned) + _FUNC.findall(cleaned) + _CODE.findall(cleaned))
        if kind == "ack":
            return
        self.last_said = ""
        ev.last_user_seq = self.seq
        ev.final_text = ""  # a new message: an earlier answer no longer ends the conversation
        if kind == "task":
            ev.tasks.append((self.seq, cleaned))
            ev.constraints.extend(constraint_sentences(cleaned))
        elif kind == "correction":
            ev.corrections.append((self.seq, cleaned))
            ev.constraints.extend(constraint_sentences(cleaned, skip_first=True))
            self.reject(cleaned)
            ev.decisions.append(Decision(f'"{clip(cleaned, MAX_QUOTE)}"', self.seq, "user"))
            self.awaiting_adoption = True
        elif kind == "rule":
            ev.constraints.extend(constraint_sentences(cleaned) or [clip(cleaned, 300)])
        elif kind == "direction":
            ev.constraints.extend(constraint_sentences(cleaned))
            ev.decisions.append(Decision(f'"{clip(cleaned, MAX_QUOTE)}"', self.seq, "user"))
        # questions: asked in passing, not work and not rules

    def reject(self, correction: str) -> None:
        """Mark the assistant's recent choices the correction talks about as rejected."""
        ev = self.ev
        words = _tokens(correction)
        recent_users = [s for s, _ in ev.tasks[-3:]] + [s for s, _ in ev.corrections[-3:-1]]
        since = min(recent_users) if recent_users else -1
        touched = False
        for d in ev.decisions:
            if d.kind == "assistant" and d.seq > since and len(_tokens(d.text) & words) >= 2:
                d.kind = "rejected"
                touched = True
        proposal = self.last_assistant_text
        if not touched and proposal and _PROPOSAL.search(proposal):  # then the last proposal was rejected
            prose = [s for s in sentences(proposal) if not _NARRATION.match(s)]
            first = next((s for s in decision_sentences(proposal)), None) or next(
                (s for s in prose if _PROPOSAL.search(s)), prose[0] if prose else "")
            dirs = re.findall(r"(?<![\w/])[\w.-]+/(?=\s|$)", proposal, re.MULTILINE)
            code = re.findall(r"`[^`\n]{2,40}`", proposal)
            extra = [t for t in dict.fromkeys([*dirs, *code]) if t.strip("`") not in correction][:6]
            text = clip(first, 300) + (f" ({', '.join(extra)})" if extra else "")
            ev.decisions.append(Decision(text, self.last_assistant_seq, "rejected"))

    # -- assistant -----------------------------------------------------------------------------
    def assistant(self, content: list[Any]) -> None:
        ev = self.ev
        self.last_assistant_seq = self.seq
        texts = []
        has_calls = False
        for block in content:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "text" and block.get("text", "").strip():
                t = block["text"].strip()
                texts.append(t)
                ev.narration.append(t)
                if not self.awaiting_adoption:  # a reply to a correction is recorded as adopted below
                    ev.decisions.extend(Decision(s, self.seq) for s in decision_sentences(t))
                ev.mentions.extend(_FUNC.findall(t))
            elif block.get("type") == "toolCall":
                has_calls = True
                args = block.get("arguments") if isinstance(block.get("arguments"), dict) else {}
                call = Call(str(block.get("name", "tool")), args, self.seq)
                cid = str(block.get("id", f"call{self.seq}"))
                self.calls[cid] = call
                self.pending[cid] = call
        if texts:
            joined = "\n".join(texts)
            self.last_assistant_text = joined
            if self.awaiting_adoption:
                adopted = _adopted(joined)
                if len(adopted) >= 20:
                    ev.decisions.append(Decision(adopted, self.seq, "adopted"))
                self.awaiting_adoption = False
        ev.ends_mid_work = has_calls
        ev.final_text = "" if has_calls else "\n".join(texts)
        ev.last_assistant_seq = self.seq
        if texts and sentences(texts[-1]):
            self.last_said = clip(sentences(texts[-1])[0].rstrip(":"), 200)
        if has_calls:
            targets = [c for c in self.pending.values() if c.seq == self.seq]
            said = self.last_said  # the newest narration since the user spoke, if any
            doing = ", ".join(dict.fromkeys(f"{c.name} {c.path}" if c.path else c.short() for c in targets[:3]))
            ev.last_step = " — ".join(x for x in (said, doing) if x)

    # -- tools ---------------------------------------------------------------------------------
    def result(self, msg: dict[str, Any]) -> None:
        cid = str(msg.get("toolCallId", ""))
        call = self.calls.get(cid) or Call(str(msg.get("toolName", "tool")), {}, self.seq)
        self.pending.pop(cid, None)
        text = text_of(msg.get("content"))
        if _interrupted(text):
            return
        command_like = call.name not in _READ_ONLY_TOOLS and call.name not in ("edit", "write")
        if msg.get("isError") or (command_like and looks_failed(text)):
            self.failure(call, error_line(text), text)
        else:
            self.success(call, text)

    def failure(self, call: Call, line: str, output: str = "") -> None:
        ev = self.ev
        message = _commit_message(call.command) if call.command else None
        if message and re.search(r"^\[[\w./-]+(?: \(root-commit\))? [0-9a-f]{7,}\] ", output, re.MULTILINE):
            self.committed(message)  # `git commit ... && git push`: the commit happened, the push failed
        family = command_family(call.command) if call.command else None
        if family:
            ev.checks[family] = (self.seq, False)
        if call.read_only() and not family:
            return
        ev.failures.append(Failure(call, line, self.seq))

    def success(self, call: Call, output: str) -> None:
        ev = self.ev
        self.successes.append(call)
        family = command_family(call.command) if call.command else None
        for f in ev.failures:  # a later success of the same call, or of the same check, resolves
            if f.resolved:
                continue
            same = f.call.key == call.key
            f_family = command_family(f.call.command) if f.call.command else None
            same_tool = bool(f.call.command) and bool(call.command) and _program(f.call.command) == _program(call.command)
            if same or (family and f_family == family) or (same_tool and not f_family):
                f.resolved = True
            elif f.call.name in ("edit", "write") and call.name in ("edit", "write") and f.call.path == call.path:
                f.resolved = True
        if family:
            ev.checks[family] = (self.seq, True)
            return
        if call.name in ("edit", "write", "multi_edit", "multiedit", "str_replace") and call.path:
            self.edited(call)
            return
        if call.name == "read" and call.path and call.path not in ev.read:
            ev.read.append(call.path)
        if not call.command or call.read_only():
            if not call.command and call.name not in _READ_ONLY_TOOLS:
                desc = f"{call.name} {call.path}" if call.path else call.name
                ev.done.append((self.seq, "other", desc))
            return
        branch = re.search(r"git (?:checkout -b|switch -c|branch)\s+([\w./-]+)", call.command)
        if branch:
            ev.done.append((self.seq, "branch", f"Created branch `{branch.group(1)}`"))
            return
        message = _commit_message(call.command)
        if message:
            self.committed(message)
            return
        renames, deleted = file_moves(call.command)
        if renames or deleted:
            for src, dst in renames:
                ev.renamed.append((src, dst))
                ev.modified = [dst if _same_file(p, src) else p for p in ev.modified]
                ev.uncommitted = [dst if _same_file(p, src) else p for p in ev.uncommitted]
            for d in deleted:
                ev.deleted.append(d)
                ev.modified = [p for p in ev.modified if not _same_file(p, d)]
                ev.uncommitted = [p for p in ev.uncommitted if not _same_file(p, d)]
            parts = []
            if renames:
                parts.append("Renamed " + ", ".join(f"{s} → {d}" for s, d in renames))
            if deleted:
                parts.append("Deleted " + ", ".join(deleted))
            ev.done.append((self.seq, "files", "; ".join(parts)))
            return
        if re.search(r"(?:^|\s)(?:mkdir|touch)\s", call.command) and len(_segments(call.command)) == 1:
            return  # scaffolding, not worth a line
        ev.done.append((self.seq, "command", f"Ran `{clip(call.command, 160)}`"))

    def committed(self, message: str) -> None:
        ev = self.ev
        ev.commits.append(message)
        ev.done.append((self.seq, "commit", f'Committed "{clip(message, 200)}"'))
        self.last_commit_seq = self.seq
        ev.uncommitted = []

    def edited(self, call: Call) -> None:
        ev = self.ev
        path = call.path
        assert path is not None
        verb = "Wrote" if call.name == "write" else "Edited"
        key = f"{verb} {path}"
        self.edit_counts[key] = self.edit_counts.get(key, 0) + 1
        if self.edit_counts[key] == 1:
            ev.done.append((self.seq, "edit", key))
        if path not in ev.modified:
            ev.modified.append(path)
        if path not in ev.uncommitted:
            ev.uncommitted.append(path)
        ev.last_edit_seq = self.seq

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

    def finish(self) -> Evidence:
        ev = self.ev
        ev.done = [
            (s, k, f"{t} (×{self.edit_counts[t]})" if k == "edit" and self.edit_counts.get(t, 1) > 1 else t)
            for s, k, t in ev.done
        ]
        if self.last_commit_seq < 0:
            ev.uncommitted = []
        # Only the newest assistant message can still be waiting for results; older calls without a
        # result belong to aborted runs.
        ev.pending = [
            f"{_describe(c)} (no result yet)" for c in self.pending.values() if c.seq == self.last_assistant_seq
        ]
        ev.constraints = dedupe(clip(s) for s in ev.constraints)
        ev.mentions = dedupe(ev.mentions)
        return ev


def _program(command: str) -> str:
    """The program a command runs (two words for launchers: `npx tsx`, `git push`): a failed
    `npx tsx -e ...` is resolved by a later `npx tsx ...` that works."""
    segs = _segments(command)
    if not segs:
        return ""
    w = segs[0].split()
    two_words = ("npx", "npm", "python", "python3", "uv", "pnpm", "yarn", "cargo", "go", "git", "gh", "make")
    return " ".join(w[:2]) if w[0] in two_words else w[0]


def _same_file(path: str, other: str) -> bool:
    """Paths as written in different calls (absolute vs relative to a `cd`)."""
    a, b = path.rstrip("/"), other.rstrip("/")
    return a == b or a.endswith("/" + b) or b.endswith("/" + a)


def _describe(call: Call) -> str:
    if call.command:
        return f"Ran `{clip(call.command, 160)}`"
    if call.name in ("edit", "multi_edit", "multiedit", "str_replace") and call.path:
        return f"Edited {call.path}"
    if call.name in ("write", "create") and call.path:
        return f"Wrote {call.path}"
    if call.path:
        return f"{call.name} {call.path}"
    shown = ", ".join(f"{k}={clip(json.dumps(v, ensure_ascii=False), 60)}" for k, v in list(call.args.items())[:2])
    return f"{call.name}({shown})"


def norm(text: str) -> str:
    """Lower case, punctuation and spacing folded: the key two wordings of one item share."""
    return re.sub(r"\W+", " ", text.lower()).strip()


def dedupe(items: Iterable[str]) -> list[str]:
    """Non-empty items in order, the first of each `norm` key kept."""
    seen: set[str] = set()
    out = []
    for it in items:
        k = norm(it)
        if it and k not in seen:
            seen.add(k)
            out.append(it)
    return out
