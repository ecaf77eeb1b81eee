"""`compactd demo`: the main job on bundled data, offline.

Writes the bundled sample session (a small project with one abandoned branch) to a temporary
folder, shows its tree and token statistics, compacts it with the embedded extractive summarizer
(no network, no settings files read: built-in defaults, except that only DEMO_KEEP_RECENT_TOKENS
are kept verbatim so the small sample has something to summarize), then shows the statistics
after and the summary.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
from pathlib import Path

from compactd.compaction.reports import stats_report
from compactd.engine.compactor import CompactionError, compact
from compactd.engine.settings import Settings
from compactd.samples import sample_session_text
from compactd.session import Session, build_session_context
from compactd.session.views import tree_report
from compactd.summarize.extractive import ExtractiveSummarizer

from ._common import CliError, print_json, run_guarded
from ._engine_cli import ProgressPrinter, run_async
from .tree_cmd import render_tree

DEMO_KEEP_RECENT_TOKENS = 6000

HELP = "compact a bundled sample session with the offline summarizer and show before/after"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--out",
        metavar="DIR",
        type=Path,
        help="keep the sample session in DIR (default: a temporary folder, removed afterwards)",
    )
    parser.add_argument(
        "--keep-recent-tokens",
        type=int,
        metavar="N",
        help=f"tokens to keep verbatim (default: {DEMO_KEEP_RECENT_TOKENS})",
    )
    parser.add_argument("--json", action="store_true", help="print machine-readable JSON")


def _stats_line(report: dict) -> str:
    return (
        f"{report['estimatedTokens']:>6} tokens (chars/4 estimate), {report['exactTokens']:>6} exact "
        f"({report['encoding']}), {report['messageCount']:>3} messages"
    )


def _stats(session: Session) -> dict:
    report = stats_report(session)
    report["messageCount"] = len(
        build_session_context(session.entries, session.leaf_id, session.by_id).messages
    )
    return report


def _demo(folder: Path, args: argparse.Namespace) -> int:
    path = folder / "sample-session.jsonl"
    path.write_text(sample_session_text(), encoding="utf-8")
    session = Session.open(path)
    keep = DEMO_KEEP_RECENT_TOKENS if args.keep_recent_tokens is None else args.keep_recent_tokens
    settings = Settings()
    settings = settings.model_copy(
        update={"compaction": settings.compaction.model_copy(update={"keep_recent_tokens": keep})}
    )
    before = _stats(session)
    tree_before = render_tree(tree_report(session))
    summarizer = ExtractiveSummarizer()
    progress = ProgressPrinter()
    try:
        result = run_async(
            compact(session, settings, summarizer, on_progress=progress, tool_results_timeout=0), progress
        )
    except CompactionError as exc:
        raise CliError(str(exc)) from exc
    after = _stats(session)
    if args.json:
        print_json({"file": str(path), "before": before, "result": result.to_json(), "after": after})
        return 0
    print(f"Sample session: {path}\n")
    print("Tree before compaction (* leaf, • on the path to the leaf):")
    for line in tree_before:
        print("  " + line)
    print(
        f"\nCompacted (keeping about {keep} recent tokens verbatim): entry {result.entry_id} appended "
        f"after {session.by_id[result.entry_id]['parentId']}, kept from "
        f"{result.first_kept_entry_id}"
    )
    print(f"Context before: {_stats_line(before)}")
    print(f"Context after:  {_stats_line(after)}")
    print("\nSummary (embedded extractive summarizer, no model called):\n")
    print(result.summary)
    return 0


def _run(args: argparse.Namespace) -> int:
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        return _demo(args.out, args)
    folder = Path(tempfile.mkdtemp(prefix="compactd-demo-"))
    try:
        return _demo(folder, args)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def run(args: argparse.Namespace) -> int:
    return run_guarded(_run, args)
