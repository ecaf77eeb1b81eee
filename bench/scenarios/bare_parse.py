"""The floor for loading a session: parse every line with orjson / json, nothing else."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import orjson

from bench import Case, Context, scenario


def _lines(path: Path) -> list[bytes]:
    with path.open("rb") as fh:
        return [line for line in fh if line.strip()]


@scenario("bare_parse", description="orjson.loads / json.loads of every line (MB/s)")
def bare_parse(ctx: Context) -> Iterator[Case]:
    for label, path in ctx.inputs():
        mb = ctx.megabytes(path)
        # lines are read once per case (untimed); only parsing is measured
        raw = _lines(path)
        text = [b.decode("utf-8") for b in raw]
        big = mb >= 50
        yield Case(f"orjson {label}", lambda raw=raw: [orjson.loads(b) for b in raw], work=mb,
                   max_repeats=3 if big else None, extra={"lines": len(raw)})
        yield Case(f"json {label}", lambda text=text: [json.loads(s) for s in text], work=mb,
                   max_repeats=3 if big else None, extra={"lines": len(text)})
