"""Tool calls and shell commands: what a call is (read-only, a check, a commit, a move), and how
its result reads (failed or not, its most telling error line)."""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass
from typing import Any

from .text import clip, first_line

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
# A named exception or error type with its message ("KeyError: 'x'", pytest's "E   ValueError: ..."):
# more telling than a "path:line:" location line.
_NAMED_ERROR = re.compile(r"^(?:E\s+)?(?:[\w.]+\.)?[A-Z]\w*(?:Error|Exception)\b:?")
_EXIT_LINE = re.compile(r"^Command exited with code \d+$")


def error_line(text: str) -> str:
    """The most telling line of an error output, verbatim (minified/huge lines avoided)."""
    all_lines = [ln.strip() for ln in text.splitlines() if ln.strip() and not _EXIT_LINE.match(ln.strip())]
    lines = [ln for ln in all_lines if len(ln) <= 300] or all_lines
    named = [ln for ln in lines if _NAMED_ERROR.search(ln)]
    typed = named or [ln for ln in lines if _TYPED_ERROR.search(ln)]
    if typed:
        # Python tracebacks end with the real exception; compilers report the first error first.
        line = typed[-1] if "Traceback (most recent call last)" in text else typed[0]
        return _with_detail(line, lines)
    for ln in lines:
        if _GENERIC_ERROR.search(ln):
            return ln
    if lines:
        return lines[0]
    return first_line(text) or "(no output)"


def is_typed_error(line: str) -> bool:
    """An error line that names its kind (an exception type, `error:`, a compiler diagnostic)."""
    return bool(_TYPED_ERROR.search(line) or _NAMED_ERROR.search(line))


def _with_detail(line: str, lines: list[str]) -> str:
    """An error line that ends in a colon announces its details: the next line is joined to it."""
    line = re.sub(r"^E\s+", "", line)
    if line.endswith(":"):
        i = lines.index(next(ln for ln in lines if ln.endswith(line)))
        if i + 1 < len(lines):
            line += " " + re.sub(r"^E\s+", "", lines[i + 1])
    return line


def looks_failed(text: str) -> bool:
    """Unmistakable failure text in a result that was not flagged isError (commands only)."""
    head = text[:4000]
    return bool(
        re.search(r"Command exited with code [1-9]\d*\s*$", text.strip())
        or re.search(r"^(?:error|fatal)(?:\[\w+\])?:", head, re.IGNORECASE | re.MULTILINE)
        or "Traceback (most recent call last)" in head
        or re.search(r"command not found|npm ERR!", head)
    )


def interrupted(text: str) -> bool:
    t = text.strip()
    return t in ("Command aborted", "Aborted", "Request was aborted.") or "(command cancelled)" in t[:200]


READ_ONLY_TOOLS = {
    "read", "grep", "find", "ls", "glob", "search", "rg", "list", "view", "cat", "web_search", "fetch",
    "webfetch", "web_fetch", "websearch", "todo_read", "todoread", "notebookread", "bashoutput", "listmcpresources",
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
    r"eslint|biome)|tsc|tsgo|pytest|python3? -m (?:pytest|mypy|ruff|unittest)|ruff|mypy|"
    r"cargo (?:check|test|build|clippy|llvm-cov|nextest|tarpaulin)|go (?:test|build|vet)|make(?: \w+)?|just(?: \w+)?|"
    r"mix (?:test|compile|credo|dialyzer|format)|uv run \w+)\b"
)
_SEGMENT_SPLIT = re.compile(r"&&|\|\||;|\n")


def _unquoted(command: str) -> str:
    return re.sub(r"'[^']*'|\"(?:[^\"\\]|\\.)*\"", "''", command)  # a quoted `|` is not a pipe


def segments(command: str) -> list[str]:
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
    for seg in segments(command):
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
    for seg in segments(command):
        seg = re.sub(r"^(?:\w+=\S+\s+)+", "", seg)  # VAR=value prefixes
        m = _CHECK.match(seg)
        if m:  # `python -m pytest` and `pytest` are the same check
            return re.sub(r"^(?:python3? -m|uv run|npx) ", "", m.group(0))
    return None


# `git commit -m "$(cat <<'EOF' … EOF)"`: the message is the here-document's body.
_HEREDOC_MESSAGE = re.compile(r"git commit\b[^\n]*?(?:-m|--message)\s+\"?\$\(cat <<-?\s*['\"]?(\w+)['\"]?\n(.*?)\n\s*\1\b",
                              re.DOTALL)


def _full_commit_message(command: str) -> str | None:
    m = _HEREDOC_MESSAGE.search(command)
    if m:
        return m.group(2)
    m = re.search(r"git commit\b[^\n]*?(?:-m|--message)\s+(\"(?:[^\"\\]|\\.)*\"|'[^']*')", command)
    return m.group(1)[1:-1].replace('\\"', '"') if m else None


def commit_message(command: str) -> str | None:
    """The subject line of the message a `git commit` command gives."""
    raw = _full_commit_message(command)
    return (raw.strip().split("\n")[0].strip() or None) if raw else None


def commit_body(command: str) -> str:
    """The opening sentence of a commit message's body (what the commit is for), '' when it has none."""
    raw = _full_commit_message(command) or ""
    body = raw.strip().split("\n\n", 1)[1] if "\n\n" in raw.strip() else ""
    first = re.split(r"(?<=[.!?])\s|(?<=[。！？])", " ".join(body.split()), maxsplit=1)[0]
    return first if len(first.split()) >= 3 and not first.startswith(("Co-Authored", "Signed-off", "🤖")) else ""


def cwd_of(command: str) -> str | None:
    m = re.match(r"\s*cd\s+(\S+)\s*(?:&&|;|\n)", command)
    return m.group(1).strip("'\"") if m else None


def words(segment: str) -> list[str]:
    try:
        return shlex.split(segment, comments=True)
    except ValueError:
        return segment.split()


def file_moves(command: str) -> tuple[list[tuple[str, str]], list[str]]:
    """(renames, deletions) a shell line performs with mv / git mv / rm / git rm."""
    renames: list[tuple[str, str]] = []
    deleted: list[str] = []
    cwd = cwd_of(command)
    for seg in re.split(r"&&|;|\n", command):
        w = words(seg.strip())
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
        if self.name in READ_ONLY_TOOLS:
            return True
        return bool(self.command) and is_read_only_command(self.command)




def program(command: str) -> str:
    """The program a command runs (two words for launchers: `npx tsx`, `git push`): a failed
    `npx tsx -e ...` is resolved by a later `npx tsx ...` that works."""
    segs = segments(command)
    if not segs:
        return ""
    w = segs[0].split()
    two_words = ("npx", "npm", "python", "python3", "uv", "pnpm", "yarn", "cargo", "go", "git", "gh", "make")
    return " ".join(w[:2]) if w[0] in two_words else w[0]


def same_file(path: str, other: str) -> bool:
    """Paths as written in different calls (absolute vs relative to a `cd`)."""
    a, b = path.rstrip("/"), other.rstrip("/")
    return a == b or a.endswith("/" + b) or b.endswith("/" + a)


def describe(call: Call) -> str:
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

