"""`compactd sample OUT`: write a generated Pi v3 session file."""

from __future__ import annotations

import argparse
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
    from compactd.samples import sample_session_text, write_session

    out: Path = args.out
    custom = (args.seed is not None or args.size is not None or args.turns is not None
              or args.no_branches or args.no_compactions)
    if custom:
        write_session(out, seed=0 if args.seed is None else args.seed, target_bytes=args.size, turns=args.turns,
                      branches=not args.no_branches, compactions=not args.no_compactions)
    else:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(sample_session_text(), encoding="utf-8", newline="\n")
    print(out)
    return 0
