"""Token statistics: a cold count (every entry tokenized) versus the count after appending one
entry with the per-entry caches kept warm (only the new entry is tokenized and estimated), as
the daemon's session/tokenStats does with its per-session ExactTokenCache."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from compactd.compaction.exact_tokens import ExactTokenCache
from compactd.compaction.reports import stats_report
from compactd.session import Session

from bench import Case, Context, scenario


def _in_memory(path: Path) -> Session:
    """The file's entries in a session without a path, so appends never touch the disk."""
    loaded = Session.open(path)
    return Session(loaded.header, list(loaded.entries), None)


@scenario("stats_incremental", description="session/tokenStats cold vs. after one append with a warm cache")
def stats_incremental(ctx: Context) -> Iterator[Case]:
    inputs = list(ctx.inputs())
    inputs.append((f"{ctx.entry_count() // 1000}k entries", ctx.entries_session(ctx.entry_count())))
    for label, path in inputs:
        session = _in_memory(path)

        def cold(s: Session = session) -> object:
            return stats_report(s, cache=ExactTokenCache())

        yield Case(f"cold {label}", cold, unit="ms", max_repeats=3)

        warm = ExactTokenCache()
        stats_report(session, cache=warm)  # fill the cache once, untimed
        counter = iter(range(10**9))

        def append_one(s: Session = session, n: Iterator[int] = counter) -> None:
            s.append_message({"role": "user", "content": [{"type": "text", "text": f"next step {next(n)}"}],
                              "timestamp": 1_700_000_000_000})

        def after_append(s: Session = session, cache: ExactTokenCache = warm) -> object:
            return stats_report(s, cache=cache)

        yield Case(f"after append {label}", after_append, unit="ms", setup=append_one,
                   repeats=5 if ctx.smoke else 21,
                   extra={"entries": len(session.entries),
                          "note": "only the appended entry is tokenized; the rest comes from the cache"})
