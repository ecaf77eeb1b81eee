"""What a finished tool call did to the work: a check passed or failed (with its counts), a commit,
a branch, files moved or deleted, a command that changed something and what it printed."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from .commands import (
    READ_ONLY_TOOLS, Call, commit_body, commit_message, command_family, cwd_of, file_moves, program, same_file, segments,
)
from .edits import describe_read
from .markup import without_envelope
from .reads import diff_digest, json_fields
from .outcomes import listing, printed_values, run_tally
from .resolve import Failure, Missing
from .text import clip

if TYPE_CHECKING:
    from .facts import Facts

# Scratch locations: deleting or moving files there is not a change to the project.
_SCRATCH = re.compile(r"^(?:/tmp/|/var/tmp/|/var/folders/|/private/tmp/|\$TMPDIR)")


_MISSING_PROGRAM = re.compile(r"command not found|not recognized as an internal or external command")

# A command that prints its own exit status was run to look at the failure, not to succeed.
_PROBE = re.compile(r"echo [\"']?[\w =:-]*\$\?")


# A tool named for looking something up ("codebase_search", "list_issues", "get_file"): without a path,
# its bare name in Done says nothing of what was done.
_LOOKUP = re.compile(r"(?:^|_|-)(?:search|find|list|get|read|view|fetch|query|grep|glob|lookup)(?:_|-|$)|search$|^edit$|^write$",
                     re.IGNORECASE)


def _ends_in_search(call: Call) -> bool:
    segs = segments(call.command)
    return bool(segs) and segs[-1].split()[0] in ("grep", "rg", "ag", "find", "test", "[")


# git's report of a new commit: `[branch abc1234] subject`.
_COMMIT_LINE = re.compile(r"^\[[\w./-]+(?: \(root-commit\))? [0-9a-f]{7,}\] (.+)$", re.MULTILINE)


def _committed_subject(command: str, output: str) -> str | None:
    """The subject git printed for a commit whose message the command does not show in full (an
    editor, a heredoc, a truncated transcript)."""
    m = _COMMIT_LINE.search(output) if re.search(r"\bgit\b[^\n]*\bcommit\b", command) else None
    return m.group(1).strip() if m else None


def _searched(call: Call) -> str:
    """A search tool's call as the command it stands for (`grep "pattern" path`), '' for other tools."""
    pattern = call.args.get("pattern") or call.args.get("query")
    if call.command or not isinstance(pattern, str) or not pattern:
        return ""
    return f'{call.name} "{pattern}"' + (f" {call.path}" if call.path else "")


class ToolEffects:
    def __init__(self, facts: Facts) -> None:
        self.f = facts
        self.committed_once = False
        self.asked = False  # the user's last message asked to see something

    def failure(self, call: Call, line: str, output: str = "") -> None:
        f = self.f
        message = commit_message(call.command) if call.command else None
        if message and re.search(r"^\[[\w./-]+(?: \(root-commit\))? [0-9a-f]{7,}\] ", output, re.MULTILINE):
            self.committed(call.seq, message)  # `git commit ... && git push`: the commit happened, the push failed
        family = command_family(call.command) if call.command else None
        tally = run_tally(output) if family else ""
        if family:
            f.checks[family] = (call.seq, False)
            f.tallies[family] = tally
        if call.read_only() and not family:
            if call.name == "read" and call.path:  # why the file could not be read (too large, missing)
                f.read_notes[call.path] = "could not be read: " + clip(re.sub(r"</?[\w_]+>", "", line), 160)
            if _MISSING_PROGRAM.search(output):  # a fact about the machine, not an error of the work
                f.missing.append(Missing(program(call.command) or call.name, line, call.seq))
            return  # a search that found nothing is not an error of the work
        printed = re.sub(r"Command exited with code \d+\s*$", "", output).strip().removeprefix("(no output)").strip()
        if _PROBE.search(call.command) or not printed and _ends_in_search(call):
            return  # a command run to see its exit status, or a search at the end of a chain that found nothing
        f.failures.append(Failure(call, line, call.seq, tally=tally))

    def success(self, call: Call, output: str) -> None:
        f = self.f
        output = without_envelope(output)  # the harness's id, wall time and exit code say nothing of what came back
        family = command_family(call.command) if call.command else None
        if family:
            f.checks[family] = (call.seq, True)
            f.tallies[family] = run_tally(output)
            return
        if call.name == "read" and call.path and call.path not in f.read:
            f.read.append(call.path)
        if call.name == "read" and call.path:
            what = describe_read(call.path, output)
            failed = f.read_notes.get(call.path, "")
            if what:  # what the file turned out to be: a finding of its own in an exploration
                f.read_notes[call.path] = (failed + "; then read in part: " if failed.startswith("could not") else "") + what
        shown = listing(output, 8) if call.read_only() and call.name != "read" else ""
        if self.asked and shown:  # the user asked to see something: what came back is the answer
            what = f"`{clip(call.command, 100)}`" if call.command else call.short()
            f.done.append((call.seq, "shown", f"Showed the user {what} → {shown}"))
            self.asked = False
        elif shown and (call.command or _searched(call)):
            # a short listing or search result, a JSON record, a diff: what the agent learned, kept when there is room
            seen = json_fields(output) or diff_digest(output) or (
                listing(output, 12) if len(output.strip().splitlines()) <= 12 else "")
            if seen:
                f.looked.append((call.command or _searched(call), seen))
        if not call.command or call.read_only():
            if not call.command and call.name not in READ_ONLY_TOOLS and (call.path or not _LOOKUP.search(call.name)):
                f.done.append((call.seq, "other", f"{call.name} {call.path}" if call.path else call.name))
            return
        self.command(call, output)

    def command(self, call: Call, output: str) -> None:
        f = self.f
        branch = re.search(r"git (?:checkout -b|switch -c|branch)\s+([\w./-]+)", call.command)
        if branch:
            f.done.append((call.seq, "branch", f"Created branch `{branch.group(1)}`"))
            return
        message = commit_message(call.command) or _committed_subject(call.command, output)
        if message:
            self.committed(call.seq, message, output, commit_body(call.command))
            return
        renames, deleted = file_moves(call.command)
        in_scratch = self.scratch((cwd_of(call.command) or "").rstrip("/") + "/")
        renames = [(s, d) for s, d in renames if not self.scratch(s) and not (in_scratch and not s.startswith("/"))]
        deleted = [d for d in deleted if not self.scratch(d) and not (in_scratch and not d.startswith("/"))]
        if renames or deleted:
            self.moved(call.seq, renames, deleted)
            return
        if re.search(r"(?:^|\s)(?:mkdir|touch|rm)\s", call.command) and len(segments(call.command)) == 1:
            return  # scaffolding or scratch clean-up, not worth a line
        shown = printed_values(output)
        f.done.append((call.seq, "command", f"Ran `{clip(call.command, 160)}`" + (f" → {shown}" if shown else "")))

    def scratch(self, path: str) -> bool:
        """A scratch location, unless the work itself happens there (a project checked out under /tmp)."""
        if not _SCRATCH.match(path):
            return False
        top = "/".join(path.split("/")[:3]) + "/"  # /tmp/<dir>/
        return not any(p.startswith(top) for p in [*self.f.modified, *self.f.read])

    def moved(self, seq: int, renames: list[tuple[str, str]], deleted: list[str]) -> None:
        f = self.f
        for src, dst in renames:
            f.renamed.append((src, dst))
            f.modified = [dst if same_file(p, src) else p for p in f.modified]
            f.uncommitted = [dst if same_file(p, src) else p for p in f.uncommitted]
        for d in deleted:
            f.deleted.append(d)
            f.modified = [p for p in f.modified if not same_file(p, d)]
            f.uncommitted = [p for p in f.uncommitted if not same_file(p, d)]
        parts = []
        if renames:
            parts.append("Renamed " + ", ".join(f"{s} → {d}" for s, d in renames))
        if deleted:
            parts.append("Deleted " + ", ".join(deleted))
        f.done.append((seq, "files", "; ".join(parts)))

    def committed(self, seq: int, message: str, output: str = "", body: str = "") -> None:
        f = self.f
        sha = re.search(r"^\[([\w./-]+)(?: \(root-commit\))? ([0-9a-f]{7,})\] ", output, re.MULTILINE)
        where = f" ({sha.group(2)} on `{sha.group(1)}`)" if sha else ""
        about = f" — {clip(body, 160)}" if body else ""  # what the commit is for, in its body's words
        f.done.append((seq, "commit", f'Committed "{clip(message, 200)}"{where}{about}'))
        self.committed_once = True
        f.last_commit_seq = seq
        f.uncommitted = []
