"""Resolution: later evidence overrides earlier evidence.

- an error is resolved when a later run of the same call, check or program succeeds, or when the
  assistant says it fixed it, naming what failed;
- a proposal the user rejected stays rejected only while nothing carried it out afterwards.
"""

from __future__ import annotations

from dataclasses import dataclass

from .commands import Call, command_family, program, same_file, segments
from .dialog import claims_fixed
from .text import anchors


@dataclass
class Failure:
    call: Call
    line: str
    seq: int
    resolved: bool = False
    tally: str = ""  # a test run's counts and failing names
    diagnosis: str = ""  # what the assistant said about it right after seeing it
    deferred: str = ""  # the user's words when they put it aside


@dataclass
class Missing:
    """A program the machine does not have (found by a read-only command), and what the agent did instead."""

    program: str
    line: str
    seq: int
    instead: str = ""


@dataclass
class Decision:
    text: str
    seq: int
    kind: str = "assistant"  # assistant | rejected | user | adopted | switch
    reason: str = ""  # for a rejection: the user's reason


def resolve_by_success(failures: list[Failure], call: Call) -> str:
    """A success of the same call, the same check, or (for a plain command) the same program
    resolves the earlier failure; a later good edit of the same file resolves a failed edit.
    Returns a decision when the success ran the failed command with another program."""
    family = command_family(call.command) if call.command else None
    switched = ""
    for f in failures:
        if f.resolved:
            continue
        swap = _swapped_program(f.call.command, call.command) if f.call.command and call.command else None
        if swap:  # the same command with another program (python -> python3): a switch made after a failure
            f.resolved = True
            switched = f"**Use `{swap[1]}` instead of `{swap[0]}`**: `{swap[0]}` failed ({f.line})"
            continue
        f_family = command_family(f.call.command) if f.call.command else None
        same_program = bool(f.call.command and call.command) and program(f.call.command) == program(call.command)
        again = bool(f.call.command and call.command) and f.call.command.strip() in segments(call.command)
        if f.call.key == call.key or again or (family and f_family == family) or (same_program and not f_family):
            f.resolved = True
        elif f.call.name in ("edit", "write") and call.name in ("edit", "write") and f.call.path == call.path:
            f.resolved = True
        elif call.name in ("edit", "write") and call.path and _edits_in_place(f.call.command, call.path):
            f.resolved = True  # a failed in-place rewrite (`sed -i`, `perl -i`) of the file, now edited directly
    return switched


def _edits_in_place(command: str, path: str) -> bool:
    """A command that rewrites `path` in place: an `-i` option and the file among its last words."""
    words = command.split()
    return any(w.startswith("-") and "i" in w.lstrip("-")[:4] for w in words[1:4]) and any(
        same_file(w.strip("'\""), path) for w in words[-3:])


def _swapped_program(failed: str, ok: str) -> tuple[str, str] | None:
    """(old, new) when two commands differ only in the program they start with."""
    a, b = failed.strip().split(maxsplit=1), ok.strip().split(maxsplit=1)
    if len(a) == 2 and len(b) == 2 and a[1] == b[1] and a[0] != b[0]:
        return a[0], b[0]
    return None


def resolve_by_claim(failures: list[Failure], sentence: str) -> None:
    """The assistant says it fixed something: open failures whose call or error it names are resolved."""
    if not claims_fixed(sentence):
        return
    named = {a.lower() for a in anchors(sentence)} | {w.lower() for w in sentence.replace("`", " ").split()
                                                    if len(w) > 5 and any(c.isupper() or c == "_" for c in w[1:])}
    if not named:
        return
    for f in failures:
        if f.resolved:
            continue
        theirs = {a.lower() for a in anchors(f.line)} | {a.lower() for a in anchors(f.call.short())}
        if f.call.path:
            theirs.add(f.call.path.lower())
        theirs |= {w.lower().strip("'\"`:,.()") for w in f.line.split() if len(w) > 5}
        if named & theirs:
            f.resolved = True


def unreject_carried_out(decisions: list[Decision], done: list[tuple[int, str, str]]) -> None:
    """A rejected proposal whose names all show up in work done after the rejection was carried out
    after all: it is a decision, not a rejection."""
    for d in decisions:
        if d.kind != "rejected":
            continue
        names = {a for a in anchors(d.text) if len(a) > 3}
        if not names:
            continue
        later = " ".join(text for seq, _, text in done if seq > d.seq)
        if all(n in later for n in names):
            d.kind = "assistant"
            d.reason = ""
