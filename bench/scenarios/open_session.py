"""Opening a session file: parse + migrate + index (`Session.open`), MB/s and peak RSS / file size.

The same run's bare orjson parse of the same lines (GC paused, like `Session.open`) is the floor to compare with; `open/bare` is the ratio of the two throughputs and `rss/size` the
child's peak resident memory over the file size."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
from compactd.session import Session
from compactd.session.store import gc_paused

from bench import Case, Context, scenario


def _bare(path: Path) -> int:
    """Read and orjson-parse every non-blank line (what `Session.open` must at least do), with the
    cyclic GC paused as `Session.open` does: the strict floor."""
    loads = orjson.loads
    with gc_paused(), path.open("rb") as fh:
        return len([loads(line) for line in fh if line.strip()])


@scenario("open_session", description="Session.open: parse + migrate + index (MB/s, ratio to bare parse, peak RSS/size)")
def open_session(ctx: Context) -> Iterator[Case]:
    inputs = list(ctx.inputs())
    inputs.insert(len(ctx.sizes()), (f"{ctx.entry_count() // 1000}k entries", ctx.entries_session(ctx.entry_count())))
    for label, path in inputs:
        mb = ctx.megabytes(path)
        size = path.stat().st_size
        big = mb >= 50
        bare: dict[str, Any] = {}

        def keep(result: dict[str, Any], bare: dict[str, Any] = bare) -> None:
            bare.update(result)

        def derive(result: dict[str, Any], bare: dict[str, Any] = bare, size: int = size) -> None:
            derived = result.setdefault("derived", {})
            derived["open/bare"] = round(result["median"] / bare["median"], 2)
            if "peak_rss_mb" in result:
                derived["rss/size"] = round(result["peak_rss_mb"] * 2**20 / size, 2)
                derived["Δrss/size"] = round((result["peak_rss_mb"] - result["baseline_rss_mb"]) * 2**20 / size, 2)

        yield Case(f"bare orjson {label}", lambda path=path: _bare(path), work=mb,
                   max_repeats=3 if big else None, after=keep)
        yield Case(
            f"open {label}",
            lambda path=path: Session.open(path),
            work=mb,
            peak_rss=True,
            max_repeats=3 if big else None,
            extra={"bytes": size},
            after=derive,
        )
