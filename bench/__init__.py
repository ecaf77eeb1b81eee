"""Benchmarks for compactd (not part of the test suite).

Run from the repository root: `python -m bench [--smoke] [--only NAME] [--case TEXT] [--json OUT]`;
`python -m bench --peer pi` measures the real Pi beside compactd (scenario `vs_pi`, see
`bench/peers.py`) and prints the side-by-side table; `python -m bench.readme FILE` turns a results file
into the README's Performance tables.

Adding a scenario: create `bench/scenarios/<name>.py` with

    from bench import Case, Context, scenario

    @scenario("open_session", description="load + index a session file")
    def open_session(ctx: Context):
        for label, path in ctx.inputs():          # generated files by size (+ the real fixture)
            yield Case(f"open {label}", lambda p=path: store.open(p), unit="MB/s",
                       work=ctx.megabytes(path), peak_rss=True)

Modules in `bench/scenarios/` are imported automatically. A scenario yields `Case`s; the runner times
each case several times (median, min, max) and, for `peak_rss=True`, runs it once more in a child
process to measure its peak resident memory.
"""

from bench.harness import SCENARIOS, Case, Context, Scenario, scenario

__all__ = ["SCENARIOS", "Case", "Context", "Scenario", "scenario"]
