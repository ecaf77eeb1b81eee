"""`compactd compact FILE [--instructions TEXT] [--keep-recent-tokens N] [--reserve-tokens N]
[--model ID] [--base-url URL] [--context-window N] [--json]`: compact the session now and write the compaction entry to
the file. The summarizer comes from the settings; without a configured model the embedded
extractive summarizer is used, so no network is needed. The flags override the settings files for
this run: `--keep-recent-tokens`/`--reserve-tokens` set compaction.keepRecentTokens/reserveTokens,
`--model`/`--base-url` set summarizer.model/baseUrl and select the OpenAI-compatible backend,
`--context-window` sets summarizer.contextWindow (a small local server's context size)."""

from __future__ import annotations

import argparse
from typing import Any

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
    parser.add_argument(
        "--keep-recent-tokens",
        type=_positive,
        metavar="N",
        help="tokens of recent context kept as is (compaction.keepRecentTokens); a LOWER value keeps less and "
        "so summarizes MORE, i.e. a larger summarization prompt",
    )
    parser.add_argument(
        "--reserve-tokens", type=_positive, metavar="N", help="compaction.reserveTokens (the summary budget is 80%% of it)"
    )
    parser.add_argument("--model", metavar="ID", help="summarizer model id (summarizer.model); uses the model backend")
    parser.add_argument(
        "--base-url",
        metavar="URL",
        help="OpenAI-compatible endpoint, e.g. http://127.0.0.1:8080/v1 (summarizer.baseUrl); uses the model backend",
    )
    parser.add_argument(
        "--context-window", type=_positive, metavar="N",
        help="the summarizer server's context size (summarizer.contextWindow; llama.cpp: --ctx-size): prompts are "
        "checked against it and a history that does not fit is summarized in chunks",
    )
    add_json_argument(parser)


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a number >= 1, got {value}")
    return value


def _overrides(args: argparse.Namespace) -> dict[str, Any]:
    compaction: dict[str, Any] = {}
    if args.keep_recent_tokens is not None:
        compaction["keepRecentTokens"] = args.keep_recent_tokens
    if args.reserve_tokens is not None:
        compaction["reserveTokens"] = args.reserve_tokens
    summarizer: dict[str, Any] = {}
    if args.model:
        summarizer["model"] = args.model
    if args.base_url:
        summarizer["baseUrl"] = args.base_url
    if summarizer:
        summarizer["backend"] = "openai"  # naming a model or an endpoint asks for the model backend
    if args.context_window is not None:
        summarizer["contextWindow"] = args.context_window
    out: dict[str, Any] = {}
    if compaction:
        out["compaction"] = compaction
    if summarizer:
        out["summarizer"] = summarizer
    return out


def _run(args: argparse.Namespace) -> int:
    session = open_session(args.file)
    settings = settings_for(session, _overrides(args))
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
    print(f"usage              {usage_line(result.usage, result.model_calls)}")
    for warning in result.warnings:
        print(f"warning            {warning}")
    print()
    print(result.summary)
    return 0


def run(args: argparse.Namespace) -> int:
    return run_guarded(_run, args)
