"""The read requests a client sends most: session/context, session/tree and
session/prepareCompaction on the session's leaf (the functions the daemon's handlers call, on a
snapshot like theirs), for each generated size and for a 100,000-entry session."""

from __future__ import annotations

from collections.abc import Iterator

from compactd.compaction.reports import prepare_report
from compactd.rpc.server import CompactdServer
from compactd.session import Session
from compactd.compaction.reports import summary_figures
from compactd.session.views import context_report, tree_report

from bench import Case, Context, scenario


@scenario("session_views", description="session/context, session/tree, session/prepareCompaction on the leaf (ms)")
def session_views(ctx: Context) -> Iterator[Case]:
    inputs = [(label, path) for label, path in ctx.inputs(fixture=False)]
    inputs.append((f"{ctx.entry_count() // 1000}k entries", ctx.entries_session(ctx.entry_count())))
    for label, path in inputs:
        session = Session.open(path)
        entries = len(session.entries)
        note = {"entries": entries}
        yield Case(f"context {label}", lambda s=session: context_report(CompactdServer.snapshot(s)),
                   unit="ms", extra=note)
        yield Case(f"prepareCompaction {label}", lambda s=session: prepare_report(CompactdServer.snapshot(s)),
                   unit="ms", extra=note)
        # What `session/tree` without `limit` answers: every node and the summary nodes' figures.
        yield Case(f"tree {label}", lambda s=session: summary_figures(s, tree_report(CompactdServer.snapshot(s))),
                   unit="ms", max_repeats=3 if entries > 20_000 else None, extra=note)
