"""`compactd prune FILE --dry-run`: which old tool outputs pruning would replace (spec §13.1).

Only the dry run exists here; pruning for real (rewrite + archive, D-19) belongs to the engine."""

from __future__ import annotations

import argparse

from compactd.compaction.prune import PruneSettings
from compactd.compaction.reports import prune_report

from ._common import (
    CliError,
    add_file_argument,
    add_json_argument,
    open_session,
    print_json,
    require_entry,
    run_guarded,
)

_LISTED = 20

HELP = "show which old tool outputs would be pruned (--dry-run)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_file_argument(parser)
    parser.add_argument("--dry-run", action="store_true", help="only report what would be pruned (required for now)")
    parser.add_argument("--leaf", metavar="ID", help="prune along the path to this entry")
    defaults = PruneSettings()
    parser.add_argument("--protect-tokens", type=int, default=defaults.protect_tokens, metavar="N",
                        help=f"newest tool-output tokens never pruned (default {defaults.protect_tokens})")
    parser.add_argument("--minimum-savings", type=int, default=defaults.minimum_savings, metavar="N",
                        help=f"prune only if at least this many tokens are saved (default {defaults.minimum_savings})")
    add_json_argument(parser)


def _run(args: argparse.Namespace) -> int:
    if not args.dry_run:
        raise CliError("prune: only --dry-run is available from the command line for now; "
                       "pruning a session is done by the daemon (session/prune)")
    session = open_session(args.file)
    require_entry(session, args.leaf, "--leaf")
    settings = PruneSettings(protect_tokens=args.protect_tokens, minimum_savings=args.minimum_savings)
    report = prune_report(session, args.leaf, settings)
    if args.json:
        print_json(report)
        return 0
    if not report["prunedCount"]:
        print("nothing to prune")
        return 0
    print(f"would prune {report['prunedCount']} tool results, saving about {report['tokensSaved']} tokens")
    shown = report["entryIds"][:_LISTED]
    for entry_id in shown:
        print(f"  {entry_id}")
    if len(report["entryIds"]) > len(shown):
        print(f"  ... and {len(report['entryIds']) - len(shown)} more (--json lists all)")
    return 0


def run(args: argparse.Namespace) -> int:
    return run_guarded(_run, args)
