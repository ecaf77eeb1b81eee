"""`python -m bench --smoke` runs the registered scenarios and writes valid JSON (no timing asserts)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from ..conftest import PI_FIXTURE, REPO_ROOT


def test_bench_smoke_runs_and_writes_results(tmp_path: Path) -> None:
    out = tmp_path / "results.json"
    proc = subprocess.run(
        [sys.executable, "-m", "bench", "--smoke", "--only", "generate", "--only", "bare_parse",
         "--json", str(out), "--data-dir", str(tmp_path / "data")],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=300, check=False,
    )
    assert proc.returncode == 0, proc.stderr
    results = json.loads(out.read_text(encoding="utf-8"))  # strict JSON (no NaN/Infinity accepted below)
    json.dumps(results, allow_nan=False)
    rows = {(r["scenario"], r["case"]): r for r in results["results"]}
    assert ("generate", "generate 100KB") in rows
    assert {("bare_parse", "orjson 100KB"), ("bare_parse", "json 100KB")} <= set(rows)
    if PI_FIXTURE.exists():
        assert ("bare_parse", "orjson fixture") in rows
    for r in rows.values():
        assert r["unit"] == "MB/s"
        assert r["runs"] == len(r["samples"]) >= 1
        assert r["min"] <= r["median"] <= r["max"] and r["min"] > 0
    gen = rows[("generate", "generate 100KB")]
    assert gen["peak_rss_mb"] >= gen["baseline_rss_mb"] > 0  # measured in a child process
    assert results["meta"]["smoke"] is True
    # the cached input was generated into the requested data dir, not into the checkout
    assert list((tmp_path / "data").glob("session-100000-s1-*.jsonl"))
    # the table names every case
    for _, case in rows:
        assert case in proc.stdout


def test_bench_rejects_unknown_scenarios(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "bench", "--smoke", "--only", "nope", "--json", str(tmp_path / "r.json")],
                          cwd=REPO_ROOT, capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 2 and "unknown scenario" in proc.stderr
    assert not (tmp_path / "r.json").exists()
