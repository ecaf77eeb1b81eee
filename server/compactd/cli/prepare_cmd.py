"""`compactd prepare FILE`: dry run of a compaction (D-25) — what would be summarized and kept."""

from __future__ import annotations

import argparse
from typing import Any

from compactd.compaction.prepare import CompactionPreparation
from compactd.compaction.reports import preparation_json, prepared_with_context
from compactd.compaction.settings import COMPAT_CHOICES, applied_compat
from compactd.session import SessionError
from compactd.session.tree import path_to

from ._common import (
    CliError,
    add_file_argument,
    add_json_argument,
    open_session,
    print_json,
    print_json_with_parts,
    require_entry,
    run_guarded,
)

HELP = "dry-run a compaction: what would be summarized and kept, tokens before/after, exact text"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_file_argument(parser)
    parser.add_argument("--leaf", metavar="ID", help="prepare as if this entry were the leaf")
    parser.add_argument("--keep-recent-tokens", type=int, metavar="N", help="recent tokens kept verbatim (default 20000)")
    parser.add_argument("--reserve-tokens", type=int, metavar="N", help="tokens reserved for the reply (default 16384)")
    parser.add_argument("--show-text", action="store_true",
                        help="also print the conversation text that would be summarized"
                             " (with --json: the conversationText and turnPrefixText fields)")
    parser.add_argument("--compat", choices=COMPAT_CHOICES, default="auto",
                        help="whose compaction to prepare: oh-my-pi's on its files and Pi's on others (auto,"
                             " the default), or force pi / omp (D-29)")
    add_json_argument(parser)


def _report(prep: CompactionPreparation, context_tokens: int | None, *, show_text: bool,
            text_as_json: bool = False) -> dict[str, Any]:
    assert context_tokens is not None  # something was prepared, so there is a leaf
    return preparation_json(prep, context_tokens=context_tokens, include_text=show_text, text_as_json=text_as_json)


def _run(args: argparse.Namespace) -> int:
    session = open_session(args.file)
    require_entry(session, args.leaf, "--leaf")
    try:
        compat = applied_compat(args.compat, bool(session.file is not None and session.file.prelude))
        prep, context_tokens = prepared_with_context(session, args.leaf, args.keep_recent_tokens,
                                                     args.reserve_tokens, compat)
    except SessionError as exc:
        raise CliError(str(exc)) from exc
    if args.json:
        # The text is opt-in as in the human-readable form: on a long uncompacted path it is tens
        # of megabytes, and serializing it is most of the command's time.
        if prep and args.show_text:  # the texts as encoded parts, never joined (print_json_with_parts)
            print_json_with_parts(_report(prep, context_tokens, show_text=True, text_as_json=True))
        else:
            print_json(_report(prep, context_tokens, show_text=False) if prep else None)
        return 0
    if not prep:
        print(f"nothing to compact: {prep.message}")
        return 0
    report = _report(prep, context_tokens, show_text=args.show_text)
    depth = len(path_to(session.by_id, report["firstKeptEntryId"])) - 1
    print(f"semantics          {'oh-my-pi 18' if prep.compat == 'omp' else 'Pi'} (compat)")
    print(f"first kept entry   {report['firstKeptEntryId']} (path index {depth})")
    split = f"yes, turn starts at {report['turnStartEntryId']}" if prep.is_split_turn else "no"
    print(f"split turn         {split}")
    print(f"to summarize       {len(prep.messages_to_summarize)} messages"
          f" + {len(prep.turn_prefix_messages)} turn-prefix messages")
    print(f"kept verbatim      {len(prep.kept_messages)} messages")
    print(f"tokens before      {report['tokensBefore']}")
    print(f"tokens after       {report['estimatedTokensAfter']} (estimate, without the new summary)")
    previous = report["previousSummary"]
    print(f"previous summary   {'yes (' + str(len(previous)) + ' chars), update prompt' if previous else 'no'}")
    print(f"read files         {len(report['readFiles'])}")
    print(f"modified files     {len(report['modifiedFiles'])}")
    if args.show_text:
        print("\n--- conversation ---")
        print(report["conversationText"])
        if report["turnPrefixText"] is not None:
            print("\n--- turn prefix ---")
            print(report["turnPrefixText"])
    return 0


def run(args: argparse.Namespace) -> int:
    return run_guarded(_run, args)
