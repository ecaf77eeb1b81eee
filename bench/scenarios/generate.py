"""Throughput of the deterministic session generator (compactd.samples)."""

from __future__ import annotations

from collections.abc import Iterator

from bench import Case, Context, scenario
from bench.harness import DATA_SEED


@scenario("generate", description="generate_session throughput (MB/s), peak RSS of one run")
def generate(ctx: Context) -> Iterator[Case]:
    from compactd.samples import generate_session

    for label, size in ctx.sizes():
        # generation is deterministic: the cached input of the same seed/size has exactly the bytes produced
        mb = ctx.megabytes(ctx.session_file(size, seed=DATA_SEED))

        def run(size: int = size) -> int:
            return sum(len(line.encode()) + 1 for line in generate_session(seed=DATA_SEED, target_bytes=size))

        yield Case(f"generate {label}", run, unit="MB/s", work=mb, peak_rss=True,
                   max_repeats=(1 if size >= 200_000_000 else 3) if size >= 50_000_000 else None)
