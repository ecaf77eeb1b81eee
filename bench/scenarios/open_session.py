"""Opening a session file: parse + migrate + index (`Session.open`), MB/s and peak RSS / file size.

The same run's bare orjson parse (scenario `bare_parse`) is the limit to compare with."""

from __future__ import annotations

from collections.abc import Iterator

from compactd.session import Session

from bench import Case, Context, scenario


@scenario("open_session", description="Session.open: parse + migrate + index (MB/s, peak RSS)")
def open_session(ctx: Context) -> Iterator[Case]:
    for label, path in ctx.inputs():
        mb = ctx.megabytes(path)
        yield Case(
            f"open {label}",
            lambda path=path: Session.open(path),
            work=mb,
            peak_rss=True,
            max_repeats=3 if mb >= 50 else None,
            extra={"bytes": path.stat().st_size},
        )
