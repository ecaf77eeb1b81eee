"""`compactd stats FILE`: context size (usage + estimate, exact tiktoken count) and the threshold."""

from __future__ import annotations

import argparse

from compactd.compaction.reports import stats_report
from compactd.compaction.settings import applied_compat

from ._common import (
    add_file_argument,
    add_json_argument,
    open_session,
    print_json,
    require_entry,
    run_guarded,
)

HELP = "token statistics of the context: usage-based, chars/4 estimate, exact count, threshold"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_file_argument(parser)
    parser.add_argument("--leaf", metavar="ID", help="statistics as if this entry were the leaf")
    parser.add_argument("--context-window", type=int, metavar="N", help="model context window (default 128000)")
    parser.add_argument("--reserve-tokens", type=int, metavar="N", help="tokens reserved for the reply (default 16384)")
    parser.add_argument("--model", metavar="ID", help="model id choosing the tokenizer (default: the session's model)")
    parser.add_argument("--per-entry", action="store_true", help="list estimate and exact count of every message entry")
    add_json_argument(parser)


def _run(args: argparse.Namespace) -> int:
    session = open_session(args.file)
    require_entry(session, args.leaf, "--leaf")
    compat = applied_compat("auto", bool(session.file is not None and session.file.prelude))  # D-29
    report = stats_report(session, args.leaf, args.context_window, args.reserve_tokens, args.model, args.per_entry,
                          compat=compat)
    if args.json:
        print_json(report)
        return 0
    window = report["contextWindow"]
    percent = 100 * report["contextTokens"] / window if window > 0 else 0.0
    print(f"context tokens     {report['contextTokens']} ({percent:.1f}% of {window})")
    print(f"  from usage       {report['usageTokens']} (message #{report['lastUsageIndex']})"
          if report["lastUsageIndex"] is not None else "  from usage       - (no valid usage)")
    print(f"  trailing est.    {report['trailingTokens']}")
    print(f"chars/4 estimate   {report['estimatedTokens']}")
    exactness = "exact" if report["exact"] else "approximation"
    print(f"tiktoken count     {report['exactTokens']} ({report['encoding']}, {exactness})")
    print(f"threshold          {report['threshold']} (window {window} - reserve {report['reserveTokens']})")
    print(f"should compact     {'yes' if report['shouldCompact'] else 'no'}")
    if args.per_entry:
        for row in report["perEntry"]:
            print(f"  {row['entryId']}  estimate {row['estimate']:>7}  exact {row['exact']:>7}")
    return 0


def run(args: argparse.Namespace) -> int:
    return run_guarded(_run, args)
