"""`compactd navigate FILE --to ID [--summarize] [--instructions TEXT] [--replace-instructions]
[--label L] [--json]`: move the leaf to an entry, optionally summarizing the branch left behind.

A session's leaf lives in memory (Pi reopens a file at its last entry), so the move persists only
through what it writes: the branch summary (which becomes the last entry) and the label.
"""

from __future__ import annotations

import argparse

from compactd.engine.navigator import NavigationError, navigate
from compactd.summarize.base import SummarizationError

from ._common import (
    CliError,
    add_file_argument,
    add_json_argument,
    open_session,
    print_json,
    require_entry,
    run_guarded,
)
from ._engine_cli import ProgressPrinter, run_async, settings_for, summarizer_for

HELP = "move the leaf to an entry, optionally writing a summary of the branch left behind"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_file_argument(parser)
    parser.add_argument("--to", metavar="ID", required=True, help="target entry id")
    parser.add_argument("--summarize", action="store_true", help="summarize the branch being left")
    parser.add_argument("--instructions", metavar="TEXT", help="custom instructions for the branch summary")
    parser.add_argument(
        "--replace-instructions",
        action="store_true",
        help="use --instructions instead of the default prompt (default: append as a focus)",
    )
    parser.add_argument(
        "--label", metavar="L", help="label the summary entry (or the target without a summary)"
    )
    add_json_argument(parser)


def _run(args: argparse.Namespace) -> int:
    session = open_session(args.file)
    require_entry(session, args.to, "--to")
    settings = settings_for(session)
    summarizer = summarizer_for(settings) if args.summarize else None
    progress = ProgressPrinter()
    entries_before = len(session.entries)
    try:
        result = run_async(
            navigate(
                session,
                args.to,
                settings,
                summarizer,
                summarize=args.summarize,
                custom_instructions=args.instructions,
                replace_instructions=args.replace_instructions,
                label=args.label,
                on_progress=progress,
            ),
            progress,
        )
    except (NavigationError, SummarizationError) as exc:
        raise CliError(str(exc)) from exc
    written = [e["id"] for e in session.entries[entries_before:]]
    if args.json:
        print_json({**result.to_json(), "leafId": session.leaf_id, "writtenEntryIds": written})
        return 0
    if result.new_leaf_id == result.old_leaf_id and not written:
        print(f"already at {args.to}; nothing to do")
        return 0
    print(f"left {result.old_leaf_id}, leaf now {session.leaf_id or '(none: a new root comes next)'}")
    if result.summary_entry_id:
        print(f"branch summary     {result.summary_entry_id}")
    for warning in result.warnings:
        print(f"warning            {warning}")
    if not written:
        print("nothing was written: the file still opens at its last entry")
    if result.editor_text is not None:
        print("\ntext to edit and resend:\n" + result.editor_text)
    if result.summary_entry_id:
        print("\n" + session.by_id[result.summary_entry_id]["summary"])
    return 0


def run(args: argparse.Namespace) -> int:
    return run_guarded(_run, args)
