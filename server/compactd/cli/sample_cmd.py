"""`compactd sample OUT`: write a generated Pi v3 session file."""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Iterable
from pathlib import Path

HELP = "write a generated, realistic Pi v3 session file (default: the small bundled sample)"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("out", metavar="OUT", type=Path, help="file to write (parent directories are created)")
    p.add_argument("--seed", type=int, default=None,
                   help="generate a new session from this seed instead of writing the fixed sample")
    size = p.add_mutually_exclusive_group()
    size.add_argument("--size", type=_bytes, metavar="BYTES",
                      help="stop after about this many bytes (suffixes K, M, G allowed, e.g. 10M)")
    size.add_argument("--turns", type=int, metavar="N", help="stop after N user turns")
    p.add_argument("--no-branches", action="store_true", help="never navigate back / write branch summaries")
    p.add_argument("--no-compactions", action="store_true", help="never write compaction entries")
    p.add_argument("--cwd", type=_directory, default=None, metavar="DIR",
                   help="working directory recorded in the session header (default: the current directory). "
                        "It must exist: Pi refuses to resume a session whose directory is missing")


def _directory(text: str) -> str:
    path = os.path.abspath(os.path.expanduser(text))
    if not os.path.isdir(path):
        raise argparse.ArgumentTypeError(f"not an existing directory: {text!r}")
    return path


def _bytes(text: str) -> int:
    units = {"K": 1024, "M": 1024**2, "G": 1024**3}
    t = text.strip().upper().removesuffix("B")
    mult = units.get(t[-1:], 1)
    try:
        value = float(t[:-1] if t[-1:] in units else t) * mult
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a size: {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError("size must be positive")
    return int(value)


def run(args: argparse.Namespace) -> int:
    from compactd.samples import generate_session
    from compactd.samples.generate import sample_lines

    out: Path = args.out
    custom = (args.seed is not None or args.size is not None or args.turns is not None
              or args.no_branches or args.no_compactions)
    if custom:
        lines: Iterable[str] = generate_session(seed=0 if args.seed is None else args.seed, target_bytes=args.size,
                                                turns=args.turns, branches=not args.no_branches,
                                                compactions=not args.no_compactions)
    else:
        lines = sample_lines()
    cwd = args.cwd if args.cwd is not None else os.getcwd()
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w", encoding="utf-8", newline="\n") as fh:
        for line in _with_header_cwd(lines, cwd):
            fh.write(line)
            fh.write("\n")
    print(out)
    return 0


def _with_header_cwd(lines: Iterable[str], cwd: str) -> Iterable[str]:
    """The generated lines with the header's `cwd` set to a directory that exists here (the
    generated content itself keeps its fictional project paths)."""
    iterator = iter(lines)
    header = json.loads(next(iterator))
    header["cwd"] = cwd
    yield json.dumps(header, separators=(",", ":"), ensure_ascii=False)
    yield from iterator
