"""Helpers shared by the command modules: opening a session with clear errors, printing JSON."""

from __future__ import annotations

import argparse
import gc
import json
import sys
from pathlib import Path
from typing import Any

import orjson

from compactd.session import Session, SessionError
from compactd.session.file import write_all


class CliError(Exception):
    """A user-facing error: printed as `compactd: <message>`, exit status 2."""


def add_file_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", metavar="FILE", type=Path, help="Pi session file (.jsonl)")


def add_json_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print machine-readable JSON")


# Sessions opened by a command run as a process (`compactd.cli.run`): kept until it exits, which
# then skips freeing them.
_kept: list[Session] | None = None


def keep_sessions_to_exit() -> None:
    global _kept
    _kept = []


def open_session(path: Path, *, must_exist: bool = True) -> Session:
    if must_exist and not path.exists():
        raise CliError(f"no such session file: {path}")
    # A command runs once: what the file loads is kept to the end, so it is frozen out of the
    # cyclic collector, whose first pass would otherwise scan every parsed object (~0.5 s on
    # 100k entries). (The daemon must not freeze: garbage frozen with it would never be freed.)
    gc.disable()
    try:
        session = Session.open(path)
    except SessionError as exc:
        raise CliError(str(exc)) from exc
    except OSError as exc:
        raise CliError(f"cannot read {path}: {exc.strerror or exc}") from exc
    finally:
        gc.freeze()
        gc.enable()
    for warning in session.warnings:
        print(f"{path}:{warning.line}: warning: {warning.message}", file=sys.stderr)
    if _kept is not None:
        _kept.append(session)
    return session


def require_entry(session: Session, entry_id: str | None, option: str) -> None:
    if entry_id is not None and entry_id not in session.by_id:
        raise CliError(f"{option}: Entry {entry_id} not found")


def print_json(value: Any) -> None:
    """Indented JSON, encoded by orjson in C (a dry run on a long path prints tens of megabytes;
    the pure-Python indenting encoder took seconds). Same text as `json.dumps(indent=2)` for
    our reports; whatever orjson refuses (a lone surrogate, a huge int) takes the slow path."""
    try:
        encoded = orjson.dumps(value, option=orjson.OPT_INDENT_2) + b"\n"
        fd = sys.stdout.fileno()
    except (orjson.JSONEncodeError, AttributeError, OSError, ValueError):  # or stdout without a descriptor
        sys.stdout.write(json.dumps(value, ensure_ascii=False, indent=2) + "\n")
        return
    sys.stdout.flush()  # whatever was printed as text goes first
    write_all(fd, encoded)  # whole, even into a pipe while the command is stopped (Ctrl-Z)


def print_json_with_parts(value: dict[str, Any]) -> None:
    """`print_json(value)` for a report whose `EncodedJsonString` members (a dry run's history
    texts, tens of megabytes on a long path) are written as the parts they already are: the rest
    is encoded with a unique placeholder string in their place, and each placeholder's bytes are
    replaced by the member's parts on the way out. The text is never joined into one string nor
    encoded again (on 100k entries that string alone is ~190 MB, four bytes a character once one
    emoji is in it). The same bytes as `print_json` of the decoded texts."""
    from uuid import uuid4

    from compactd.compaction.serialize import EncodedJsonString

    placeholders: dict[bytes, list[bytes]] = {}
    plain: dict[str, Any] = {}
    for key, member in value.items():
        if isinstance(member, EncodedJsonString):
            marker = f"compactd-text-{uuid4().hex}"
            placeholders[b'"' + marker.encode() + b'"'] = member.parts
            plain[key] = marker
        else:
            plain[key] = member
    try:
        encoded = orjson.dumps(plain, option=orjson.OPT_INDENT_2) + b"\n"
        fd = sys.stdout.fileno()
    except (orjson.JSONEncodeError, AttributeError, OSError, ValueError):
        print_json({k: v.value() if isinstance(v, EncodedJsonString) else v for k, v in value.items()})
        return
    pieces = [encoded]
    for marker, parts in placeholders.items():
        last = pieces.pop()
        before, found, after = last.partition(marker)
        pieces += [before, *parts, after] if found else [last]
    sys.stdout.flush()  # whatever was printed as text goes first
    for piece in pieces:
        write_all(fd, piece)


def run_guarded(func: Any, args: argparse.Namespace) -> int:
    try:
        return int(func(args) or 0)
    except CliError as exc:
        print(f"compactd: {exc}", file=sys.stderr)
        return 2
