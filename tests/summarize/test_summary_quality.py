"""The embedded summarizer on the probe benchmark (bench/quality), DEVELOPMENT regions only.

Held-out regions (bench/quality/split.json) are never scored here: a test that reports on them
would put their results in front of whoever is changing the summarizer. The lead scores them with
`python -m bench --only summary_quality --split heldout`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bench.quality.run import STORED, Report, all_regions, evaluate
from bench.quality.split import DEV

from ..conftest import REPO_ROOT


@pytest.fixture(scope="module")
def report() -> Report:
    regions = all_regions(smoke=False, split="dev")
    assert regions and all(r.split == DEV for r in regions)
    return evaluate(regions)


def test_embedded_answers_at_least_90_percent_of_development_probes_with_no_forbidden_match(report: Report) -> None:
    s = report.score("embedded")
    assert s.total >= 300
    assert s.forbidden == 0, [(r.probe.id, r.forbidden) for r in s.results if r.forbidden]
    assert s.ratio >= 0.90, [r.probe.id for r in s.failures()]
    # The suite sees Pi's own real sessions only (the external ones stay on the machine, tests/conftest.py).
    assert report.score("embedded", source="real").ratio >= 0.90
    assert report.score("embedded", source="corpus").ratio >= 0.85


def test_embedded_answers_more_than_the_stored_model_summaries_on_their_regions(report: Report) -> None:
    anchors = {r.region.name for r in report.results if r.contender == STORED}
    assert len(anchors) >= 4
    for name in sorted(anchors):  # on every region that has one, not only in total
        ours, theirs = report.score("embedded", regions={name}), report.score(STORED, regions={name})
        assert ours.total == theirs.total
        assert ours.passed >= theirs.passed, (name, ours.passed, theirs.passed)


def test_bench_smoke_prints_scores_per_category_for_every_contender(tmp_path: Path) -> None:
    out = tmp_path / "results.json"
    proc = subprocess.run(
        [sys.executable, "-m", "bench", "--smoke", "--split", "dev", "--only", "summary_quality", "--json", str(out)],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=600, check=False,
    )
    assert proc.returncode == 0, proc.stderr
    header = next(ln for ln in proc.stdout.splitlines() if ln.startswith("contender"))
    for column in ("recall", "artifact", "decision", "constraint", "continuation", "overall", "forbidden"):
        assert column in header
    rows = {r["case"]: r for r in json.loads(out.read_text(encoding="utf-8"))["results"]}
    assert {"embedded", STORED, "guard: file paths", "guard: raw text"} <= set(rows)
    assert rows["embedded"]["derived"]["forbidden"] == "0"
    assert rows["guard: file paths"]["derived"]["overall"] in ("0%", "1%", "2%", "3%", "4%", "5%")
