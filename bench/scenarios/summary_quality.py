"""Summary quality (issue 13): probe scores per category for every contender, as derived values;
the timed work is summarizing every region (generated stories and real Pi sessions)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from bench import Case, Context, scenario
from bench.quality.run import (
    Report,
    all_regions,
    category_scores,
    table,
    configured_model,
    raw_text,
    path_dump,
    run_contender,
    _summarize,
)
from compactd.summarize.extractive import ExtractiveSummarizer


@scenario("summary_quality", description="probe scores per category (embedded, model, Pi's stored summaries, guards)")
def summary_quality(ctx: Context) -> Iterator[Case]:
    regions = all_regions(smoke=ctx.smoke)
    state: dict[str, Report] = {}

    def contender(name: str, produce: Any) -> Case:
        def fn() -> None:
            state[name] = Report(run_contender(name, regions, produce))

        def after(row: dict[str, Any]) -> None:
            row["derived"] = category_scores(state[name].score(name))

        return Case(name, fn, unit="ms", repeats=1 if name != "embedded" else None, after=after,
                    extra={"regions": len(regions)})

    embedded = ExtractiveSummarizer()
    yield contender("embedded", lambda r: _summarize(embedded, r))
    model = configured_model()
    if model is not None:
        yield contender(f"model ({model.name})", lambda r: _summarize(model, r))
    yield contender("pi stored", lambda r: (r.stored_summary, 0.0) if r.stored_summary else None)
    yield contender("guard: file paths", lambda r: (path_dump(r), 0.0))
    yield contender("guard: raw text", lambda r: (raw_text(r), 0.0))
    # Every case has run: the per-source table (generated / real / regions with a Pi summary).
    combined = Report([res for rep in state.values() for res in rep.results])
    print("summary quality (share of probes answered):\n" + table(combined) + "\n", flush=True)

