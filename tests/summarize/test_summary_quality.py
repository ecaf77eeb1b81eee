"""The embedded summarizer meets the issue-13 targets on the probe benchmark (bench/quality):
at least 85% of all probes, no forbidden match, and at least as good as Pi's own LLM summaries
on the regions those summaries cover."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bench.quality.run import Report, all_regions, evaluate

from ..conftest import REPO_ROOT


@pytest.fixture(scope="module")
def report() -> Report:
    return evaluate(all_regions(smoke=False))


def test_embedded_answers_at_least_85_percent_with_no_forbidden_match(report: Report) -> None:
    s = report.score("embedded")
    assert s.total >= 240
    assert s.forbidden == 0, [(r.probe.id, r.forbidden) for r in s.results if r.forbidden]
    assert s.ratio >= 0.85, [r.probe.id for r in s.failures()]
    assert report.score("embedded", source="real").ratio >= 0.85


def test_embedded_is_at_least_as_good_as_pis_stored_summaries_on_their_regions(report: Report) -> None:
    anchors = {r.region.name for r in report.results if r.contender == "pi stored"}
    assert len(anchors) == 4
    ours, pis = report.score("embedded", regions=anchors), report.score("pi stored", regions=anchors)
    assert ours.total == pis.total
    assert ours.passed >= pis.passed


def test_held_out_real_regions_are_not_worse_than_the_target(report: Report) -> None:
    held_out = {r.region.name for r in report.results if r.region.source == "real" and not r.region.tuned}
    assert held_out
    assert report.score("embedded", regions=held_out).ratio >= 0.85


def test_bench_smoke_prints_scores_per_category_for_every_contender(tmp_path: Path) -> None:
    out = tmp_path / "results.json"
    proc = subprocess.run(
        [sys.executable, "-m", "bench", "--smoke", "--only", "summary_quality", "--json", str(out)],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=600, check=False,
    )
    assert proc.returncode == 0, proc.stderr
    header = next(ln for ln in proc.stdout.splitlines() if ln.startswith("contender"))
    for column in ("recall", "artifact", "decision", "constraint", "continuation", "overall", "forbidden"):
        assert column in header
    rows = {r["case"]: r for r in json.loads(out.read_text(encoding="utf-8"))["results"]}
    assert {"embedded", "pi stored", "guard: file paths", "guard: raw text"} <= set(rows)
    assert rows["embedded"]["derived"]["forbidden"] == "0"
    assert rows["guard: file paths"]["derived"]["overall"] in ("0%", "1%", "2%", "3%", "4%", "5%")
