"""`compactd compact FILE [--instructions TEXT] [--json]`: compact the session now and write the
compaction entry to the file (the summarizer comes from the settings; without a configured model,
the embedded extractive summarizer is used, so no network is needed)."""

from __future__ import annotations

import argparse

from compactd.engine.compactor import CompactionError, compact
from compactd.summarize.base import SummarizationError

from ._common import CliError, add_file_argument, add_json_argument, open_session, print_json, run_guarded
from ._engine_cli import ProgressPrinter, run_async, settings_for, summarizer_for, usage_line

HELP = "compact the session at its leaf and append the compaction entry to the file"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_file_argument(parser)
    parser.add_argument(
        "--instructions", metavar="TEXT", help="extra focus for the summary (appended as 'Additional focus:')"
    )
    add_json_argument(parser)


def _run(args: argparse.Namespace) -> int:
    session = open_session(args.file)
    settings = settings_for(session)
    summarizer = summarizer_for(settings)
    progress = ProgressPrinter()
    try:
        # Nobody appends tool results from the command line: refuse at once instead of waiting (D-20).
        result = run_async(
            compact(
                session,
                settings,
                summarizer,
                reason="manual",
                custom_instructions=args.instructions,
                on_progress=progress,
                tool_results_timeout=0,
            ),
            progress,
        )
    except (CompactionError, SummarizationError) as exc:
        raise CliError(str(exc)) from exc
    if args.json:
        print_json(result.to_json())
        return 0
    details = result.details if isinstance(result.details, dict) else {}
    print(f"compaction entry   {result.entry_id} (summarizer: {summarizer.name})")
    print(f"first kept entry   {result.first_kept_entry_id}")
    print(f"tokens before      {result.tokens_before}")
    print(f"estimated after    {result.estimated_tokens_after}")
    print(
        f"files              {len(details.get('readFiles') or [])} read, "
        f"{len(details.get('modifiedFiles') or [])} modified"
    )
    print(f"usage              {usage_line(result.usage)}")
    for warning in result.warnings:
        print(f"warning            {warning}")
    print()
    print(result.summary)
    return 0


def run(args: argparse.Namespace) -> int:
    return run_guarded(_run, args)
