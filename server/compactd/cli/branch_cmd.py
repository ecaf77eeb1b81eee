"""`compactd branch FILE --from ID --to ID`: what a branch summary would cover (spec §12.1–12.2)."""

from __future__ import annotations

import argparse

from compactd.compaction.reports import branch_report
from compactd.compaction.settings import COMPAT_CHOICES, applied_compat

from ._common import (
    add_file_argument,
    add_json_argument,
    open_session,
    print_json,
    require_entry,
    run_guarded,
)

HELP = "show what leaving one entry for another would summarize (entries, messages in budget, files)"


def _budget(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError("must be 0 (no limit) or a positive number of tokens")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_file_argument(parser)
    parser.add_argument("--from", dest="from_id", required=True, metavar="ID", help="the leaf being left")
    parser.add_argument("--to", dest="to_id", required=True, metavar="ID", help="the navigation target")
    parser.add_argument("--budget", type=_budget, metavar="N",
                        help="token budget for the summarized messages (default 128000 - 16384; 0 = no limit)")
    parser.add_argument("--compat", choices=COMPAT_CHOICES, default="auto",
                        help="whose branch preparation: oh-my-pi's on its files and Pi's on others (auto,"
                             " the default), or force pi / omp (D-29)")
    add_json_argument(parser)


def _run(args: argparse.Namespace) -> int:
    session = open_session(args.file)
    require_entry(session, args.from_id, "--from")
    require_entry(session, args.to_id, "--to")
    compat = applied_compat(args.compat, bool(session.file is not None and session.file.prelude))
    report = branch_report(session, args.from_id, args.to_id, args.budget, compat)
    if args.json:
        print_json(report)
        return 0
    print(f"common ancestor    {report['commonAncestorId'] or '-'}")
    print(f"abandoned entries  {len(report['entryIds'])}")
    print(f"messages in budget {len(report['messages'])} ({report['totalTokens']} tokens)")
    print(f"read files         {len(report['readFiles'])}")
    print(f"modified files     {len(report['modifiedFiles'])}")
    for message in report["messages"]:
        print(f"  {message['entryId']}  {message['role']}")
    return 0


def run(args: argparse.Namespace) -> int:
    return run_guarded(_run, args)
