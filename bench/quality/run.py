"""Score summarizers on the probe regions: generated stories, real sessions (Pi's, and external ones
kept outside the repository, see `external_dir`) and the authored corpus (tests/fixtures/corpus).

Columns ("contenders"): the embedded extractive summarizer (always), a configured model (when the
settings of the current folder name one), the stored model-written summaries (regions that have
one: Pi's compactions, an agent's own /compact), the corpus's hand-written handovers (the
reference), and two guards that keep the probes honest — a dump of the region's file paths (must
score near 0) and the raw region text itself (must score near 100%).

Regions are split into development and held-out (split.json). Held-out regions are reported by
their totals only: their probes, failures and summaries are never printed, so that nobody changing
the summarizer reads them by accident.
"""

from __future__ import annotations

import asyncio
import os
import re
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from compactd.samples.probes import CATEGORIES, Score, score_probes
from compactd.samples.story import generate_story
from compactd.summarize.base import Summarizer
from compactd.summarize.extractive import ExtractiveSummarizer

from .probefile import load_dir
from .real import FIXTURES, real_regions
from .regions import Region, index_of, lines_to_path
from .split import DEV, HELDOUT, SplitName, assign, only

CORPUS = FIXTURES / "corpus"


def external_dir() -> Path:
    """Where the external real sessions live: `$COMPACTD_EXTERNAL_SESSIONS`, else `external-sessions/` beside
    the checkout. They are public transcripts fetched from other repositories, so they are data kept on the
    machine, never committed (how to rebuild them: bench/quality/EXTERNAL.md); absent, they are skipped."""
    configured = os.environ.get("COMPACTD_EXTERNAL_SESSIONS")
    return Path(configured) if configured else FIXTURES.parents[2] / "external-sessions"


EXTERNAL = external_dir()
STORED = "model-written"  # contender: the stored summary a model wrote of the region
HANDOVER = "reference: handover"

SEEDS = tuple(range(1, 13))
SMOKE_SEEDS = (1, 2, 3)


def generated_regions(seeds: Iterable[int]) -> list[Region]:
    out = []
    for seed in seeds:
        story = generate_story(seed)
        path = lines_to_path(story.lines)
        out.append(Region(f"story seed {seed}", "generated", path, index_of(path, story.region_start_id),
                          index_of(path, story.first_kept_id), story.probes, previous_summary=story.previous_summary))
    return out


def all_regions(*, smoke: bool = False, split: SplitName | None = None) -> list[Region]:
    """Every region, each assigned to its side of the split; only one side when `split` is given."""
    regions = (generated_regions(SMOKE_SEEDS if smoke else SEEDS) + real_regions()
               + load_dir(EXTERNAL, source="real", prefix="external")
               + load_dir(CORPUS, source="corpus", prefix="corpus"))
    return only(assign(regions), split)


_PATHISH = re.compile(r"(?:[\w.@-]+/)+[\w.@-]+|[\w-]+\.(?:py|ts|js|json|md|toml|txt|sh)\b")


def path_dump(region: Region) -> str:
    """Guard: every file path of the region, in Pi's file-tag format, and nothing else."""
    paths: dict[str, None] = {}
    for m in region.messages():
        content = m.get("content")
        for block in content if isinstance(content, list) else []:
            if isinstance(block, dict) and block.get("type") == "toolCall":
                args = block.get("arguments") or {}
                for value in args.values() if isinstance(args, dict) else []:
                    for p in _PATHISH.findall(str(value)):
                        paths[p] = None
    return "<modified-files>\n" + "\n".join(paths) + "\n</modified-files>"


_HEADING_MARK = re.compile(r"^#{1,6}\s+", re.MULTILINE)


def raw_text(region: Region) -> str:
    """Guard: the region's serialized conversation (and the previous summary it would update).
    Markdown heading marks are removed: a transcript has no summary sections, and headings quoted
    in it must not be mistaken for them."""
    return _HEADING_MARK.sub("", (region.previous_summary or "") + "\n\n" + region.conversation_text())


@dataclass
class Result:
    contender: str
    region: Region
    text: str
    score: Score
    seconds: float


@dataclass
class Report:
    results: list[Result] = field(default_factory=list)

    def contenders(self) -> list[str]:
        return list(dict.fromkeys(r.contender for r in self.results))

    def score(self, contender: str, *, source: str | None = None, regions: set[str] | None = None) -> Score:
        total = Score()
        for r in self.results:
            if r.contender != contender or (source and r.region.source != source):
                continue
            if regions is not None and r.region.name not in regions:
                continue
            total.extend(r.score)
        return total


def _summarize(summarizer: Summarizer, region: Region) -> tuple[str, float]:
    t0 = time.perf_counter()
    result = asyncio.run(summarizer.summarize(region.request()))
    return result.text, time.perf_counter() - t0


def configured_model() -> Summarizer | None:
    """The summarizer the settings of the current folder configure, unless it is the embedded one."""
    from compactd.engine.settings import build_summarizer, load_settings

    try:
        summarizer = build_summarizer(load_settings(os.getcwd()))
    except Exception as exc:  # unusable settings: no model row, and say why
        print(f"summary quality: no model row ({exc})", file=sys.stderr)
        return None
    return None if summarizer.name == "extractive" else summarizer


def run_contender(name: str, regions: list[Region], produce: Callable[[Region], tuple[str, float] | None]) -> list[Result]:
    out = []
    for region in regions:
        produced = produce(region)
        if produced is None:
            continue
        text, seconds = produced
        out.append(Result(name, region, text, score_probes(text, region.probes), seconds))
    return out


def stored(region: Region) -> tuple[str, float] | None:
    return (region.stored_summary, 0.0) if region.stored_summary else None


def handover(region: Region) -> tuple[str, float] | None:
    return (region.handover, 0.0) if region.handover else None


def evaluate(regions: list[Region], *, model: Summarizer | None = None) -> Report:
    report = Report()
    embedded = ExtractiveSummarizer()
    report.results += run_contender("embedded", regions, lambda r: _summarize(embedded, r))
    if model is not None:
        report.results += run_contender(f"model ({model.name})", regions, lambda r: _summarize(model, r))
    report.results += run_contender(STORED, regions, stored)
    report.results += run_contender(HANDOVER, regions, handover)
    report.results += run_contender("guard: file paths", regions, lambda r: (path_dump(r), 0.0))
    report.results += run_contender("guard: raw text", regions, lambda r: (raw_text(r), 0.0))
    return report


def pct(passed: int, total: int) -> str:
    return f"{100 * passed / total:.0f}%" if total else "–"


def category_scores(score: Score) -> dict[str, str]:
    cats = score.by_category()
    out = {c: pct(*cats[c]) if c in cats else "–" for c in CATEGORIES}
    out["overall"] = pct(score.passed, score.total)
    out["probes"] = str(score.total)
    out["forbidden"] = str(score.forbidden)
    return out


def per_region(report: Report) -> dict[str, dict[str, object]]:
    """Each region's score for the results file: split, source, probes answered, forbidden matches
    and (passed, total) per category. Totals only: no probe ids or texts, held out or not."""
    out: dict[str, dict[str, object]] = {}
    for r in report.results:
        out[r.region.name] = {"split": r.region.split, "source": r.region.source, "passed": r.score.passed,
                              "total": r.score.total, "forbidden": r.score.forbidden,
                              "categories": {c: list(v) for c, v in r.score.by_category().items()}}
    return out


def _render(rows: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def table(report: Report, regions: set[str] | None = None) -> str:
    """Per contender and source: scores per category, overall, forbidden matches; then the
    head-to-head on the regions that have a stored model-written summary. Limited to `regions`
    when given."""
    header = ["contender", "regions", *CATEGORIES, "overall", "probes", "forbidden"]
    rows = [header]
    names = {r.region.name for r in report.results} if regions is None else regions
    sources = list(dict.fromkeys(r.region.source for r in report.results if r.region.name in names))
    for c in report.contenders():
        for source in (*sources, None) if len(sources) > 1 else (None,):
            s = report.score(c, source=source, regions=names)
            if not s.total:
                continue
            cs = category_scores(s)
            rows.append([c, source or "all", *(cs[k] for k in (*CATEGORIES, "overall", "probes", "forbidden"))])
    anchors = {r.region.name for r in report.results if r.contender == STORED} & names
    if anchors:
        for c in report.contenders():
            if c.startswith("guard") or c == HANDOVER:
                continue
            s = report.score(c, regions=anchors)
            if s.total:
                cs = category_scores(s)
                rows.append([c, f"with {STORED}", *(cs[k] for k in (*CATEGORIES, "overall", "probes", "forbidden"))])
    return _render(rows)


def _cell(score: Score | None) -> str:
    if score is None:
        return "–"
    bad = f", {score.forbidden} forbidden" if score.forbidden else ""
    return f"{score.passed}/{score.total} {pct(score.passed, score.total)}{bad}"


def region_table(report: Report, side: str) -> str:
    """One row per region of a side of the split: each contender's score (probes answered)."""
    contenders = report.contenders()
    by: dict[tuple[str, str], Score] = {(r.region.name, r.contender): r.score for r in report.results}
    regions = list({r.region.name: r.region for r in report.results if r.region.split == side}.values())
    rows = [["region", "source", *contenders]]
    for region in regions:
        rows.append([region.name, region.source, *(_cell(by.get((region.name, c))) for c in contenders)])
    names = {r.name for r in regions}
    rows.append(["total", "", *(_cell(report.score(c, regions=names)) for c in contenders)])
    return _render(rows)


def split_report(report: Report) -> str:
    """Held-out regions first, then development: per region, then per contender and category."""
    from .split import load_split

    frozen = load_split().frozen
    out = []
    for side, title in ((HELDOUT, f"HELD-OUT regions (split frozen {frozen}; totals only)"),
                        (DEV, "DEVELOPMENT regions (read while changing the summarizer)")):
        names = {r.region.name for r in report.results if r.region.split == side}
        if not names:
            continue
        out.append(f"{title}\n{region_table(report, side)}\n\n{table(report, names)}")
    return "\n\n".join(out)


def details(report: Report, contender: str = "embedded") -> str:
    """Every failed probe of `contender` on development regions; held-out regions by total only."""
    lines = []
    for r in report.results:
        if r.contender != contender:
            continue
        if r.region.split == HELDOUT:
            lines.append(f"{r.region.name} (held out): {r.score.passed}/{r.score.total} in {r.seconds * 1000:.0f} ms")
            continue
        lines.append(f"{r.region.name} (dev): {r.score.passed}/{r.score.total} in {r.seconds * 1000:.0f} ms, "
                     f"{len(r.text):,} chars")
        for f in r.score.failures():
            why = f"forbidden: {f.forbidden!r}" if f.forbidden else "not answered"
            lines.append(f"  - {f.probe.id} [{f.probe.category}] {f.probe.question} — {why}")
    sizes = sorted(len(r.text) for r in report.results if r.contender == contender and r.region.split == DEV)
    if sizes:  # how long the summaries are (a model-written one of a long region is 3-5k characters)
        lines.append(f"{contender} summary size on development regions: median {sizes[len(sizes) // 2]:,} chars, "
                     f"max {sizes[-1]:,}; over 5,000 chars: {sum(n > 5000 for n in sizes)} of {len(sizes)}")
    return "\n".join(lines)
