"""Summary quality (issues 13, 25): probe scores per split, region and category for every contender,
as derived values; the timed work is summarizing every region (generated stories, real sessions,
the authored corpus). `--split dev|heldout` limits the run to one side of bench/quality/split.json;
held-out regions are reported by their totals only."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from bench import Case, Context, scenario
from bench.quality.run import (
    STORED,
    Report,
    _summarize,
    all_regions,
    category_scores,
    configured_model,
    per_region,
    handover,
    path_dump,
    pct,
    raw_text,
    run_contender,
    split_report,
    stored,
)
from bench.quality.split import DEV, HELDOUT
from compactd.summarize.extractive import ExtractiveSummarizer


@scenario("summary_quality", description="probe scores, held-out and development regions "
          "(embedded, model, stored model-written summaries, handovers, guards)")
def summary_quality(ctx: Context) -> Iterator[Case]:
    regions = all_regions(smoke=ctx.smoke, split=ctx.split)  # type: ignore[arg-type]
    state: dict[str, Report] = {}

    def contender(name: str, produce: Any) -> Case:
        def fn() -> None:
            state[name] = Report(run_contender(name, regions, produce))

        def after(row: dict[str, Any]) -> None:
            report = state[name]
            derived = category_scores(report.score(name))
            for side in (HELDOUT, DEV):  # overall per side of the split, held-out first
                s = report.score(name, regions={r.name for r in regions if r.split == side})
                if s.total:
                    derived[side] = pct(s.passed, s.total)
            row["derived"] = derived
            row["extra"]["per_region"] = per_region(report)  # for `python -m bench.quality.readme`

        return Case(name, fn, unit="ms", repeats=1 if name != "embedded" else None, after=after,
                    extra={"regions": len(regions)})

    embedded = ExtractiveSummarizer()
    yield contender("embedded", lambda r: _summarize(embedded, r))
    model = configured_model()
    if model is not None:
        yield contender(f"model ({model.name})", lambda r: _summarize(model, r))
    yield contender(STORED, stored)
    yield contender("reference: handover", handover)
    yield contender("guard: file paths", lambda r: (path_dump(r), 0.0))
    yield contender("guard: raw text", lambda r: (raw_text(r), 0.0))
    # Every case has run: held-out regions first (totals only), then development.
    combined = Report([res for rep in state.values() for res in rep.results])
    print("summary quality (probes answered):\n" + split_report(combined) + "\n", flush=True)
