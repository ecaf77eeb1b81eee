"""The quality benchmark's corpus and external regions (probe files), its development / held-out
split, and the rule that held-out regions are reported by their totals only."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from bench.quality.probefile import has_anchor, load_dir, load_probe_file
from bench.quality.readme import load as load_results
from bench.quality.readme import markdown
from bench.quality.run import CORPUS, EXTERNAL, all_regions, details, evaluate, path_dump, raw_text, split_report
from bench.quality.split import DEV, HELDOUT, load_split
from compactd.samples.probes import score_probes

from ..conftest import REPO_ROOT

CORPUS_NAMES = {"hookrelay-ratelimit", "clinic-a11y", "polars-migration", "clap-derive-cli", "node-memleak"}


def probe_files() -> list[Path]:
    return sorted(CORPUS.glob("*.probes.json")) + sorted(EXTERNAL.glob("*.probes.json"))


def test_every_corpus_session_is_a_region_cut_where_its_probe_file_says() -> None:
    regions = {r.name: r for r in load_dir(CORPUS, source="corpus", prefix="corpus")}
    assert set(regions) == {f"corpus/{n}" for n in CORPUS_NAMES}
    for name in CORPUS_NAMES:
        spec = json.loads((CORPUS / f"{name}.probes.json").read_text(encoding="utf-8"))
        region = regions[f"corpus/{name}"]
        assert region.start == 0
        assert region.path[region.end]["id"] == spec["firstKeptEntryId"]
        assert [p.id for p in region.probes] == [p["id"] for p in spec["probes"]]
        assert region.handover  # the authors' reference handover rides along


@pytest.mark.parametrize("file", probe_files(), ids=lambda f: f.name.removesuffix(".probes.json"))
def test_probes_are_honest_the_raw_region_answers_them_and_a_path_dump_does_not(file: Path) -> None:
    region = load_probe_file(file, source="x", prefix="x")
    raw = score_probes(raw_text(region), region.probes)
    paths = score_probes(path_dump(region), region.probes)
    assert raw.ratio >= 0.9, [r.probe.id for r in raw.failures()]
    assert paths.passed <= 2, [r.probe.id for r in paths.results if r.passed]
    if region.handover:
        assert score_probes(region.handover, region.probes).ratio == 1.0


def _tiny_probe_file(tmp_path: Path, alternatives: list[list[str]], forbidden: list[str] | None = None) -> Path:
    shutil.copyfile(CORPUS / "hookrelay-ratelimit.jsonl", tmp_path / "s.jsonl")
    spec = json.loads((CORPUS / "hookrelay-ratelimit.probes.json").read_text(encoding="utf-8"))
    probe = {"id": "t", "category": "recall", "question": "q?", "alternatives": alternatives}
    if forbidden:
        probe["forbidden"] = forbidden
    out = tmp_path / "t.probes.json"
    out.write_text(json.dumps({"name": "t", "session": "s.jsonl", "firstKeptEntryId": spec["firstKeptEntryId"],
                               "probes": [probe]}), encoding="utf-8")
    return out


def test_probe_files_are_scored_with_ignorecase_and_dotall(tmp_path: Path) -> None:
    region = load_probe_file(_tiny_probe_file(tmp_path, [["rate.limit", "RETRY.{0,5}after"], ["never"]]),
                             source="x", prefix="x")
    assert score_probes("Rate\nlimit, then retry\nAFTER", region.probes).passed == 1  # `.` crosses lines
    assert score_probes("rate limit only", region.probes).passed == 0  # one alternative needs all of its parts
    assert score_probes("it is never", region.probes).passed == 1
    region = load_probe_file(_tiny_probe_file(tmp_path, [["limit"]], ["not.{0,9}chosen"]), source="x", prefix="x")
    scored = score_probes("limit was\nnot chosen", region.probes)
    assert scored.passed == 0 and scored.forbidden == 1


def test_anchored_patterns_are_refused_rather_than_scored_differently(tmp_path: Path) -> None:
    assert has_anchor("^goal") and has_anchor("done$") and not has_anchor(r"[^\n]{0,9}\$5 \^x")
    with pytest.raises(ValueError, match="anchors"):
        load_probe_file(_tiny_probe_file(tmp_path, [["^rate"]]), source="x", prefix="x")


def test_the_split_puts_every_region_on_exactly_one_side() -> None:
    split = load_split()
    assert split.frozen == "2026-12-03"
    regions = all_regions(smoke=True)
    sides = {r.name: r.split for r in regions}
    assert {sides["corpus/clinic-a11y"], sides["corpus/node-memleak"]} == {HELDOUT}
    # The real Pi regions were read while writing rules: development, whatever was said before.
    for name in ("root-session", "large-session a", "large-session b", "before-compaction leaf"):
        assert sides[name] == DEV and next(r for r in regions if r.name == name).tuned
    assert {n for n, s in sides.items() if s == HELDOUT} == {n for n in split.heldout if n in sides}
    assert all(r.split == DEV for r in all_regions(smoke=True, split="dev"))
    assert {r.name for r in all_regions(smoke=True, split="heldout")} == {n for n, s in sides.items() if s == HELDOUT}


def test_a_region_missing_from_the_split_is_an_error(tmp_path: Path) -> None:
    from bench.quality.split import SplitFile, assign

    regions = all_regions(smoke=True)
    split = load_split()
    partial = SplitFile(frozen=split.frozen, rule=split.rule, heldout={},
                        development={k: v for k, v in split.development.items() if k != "root-session"})
    with pytest.raises(ValueError, match="root-session"):
        assign(regions, partial)


def test_held_out_regions_are_reported_by_totals_only() -> None:
    regions = all_regions(smoke=True, split="heldout")
    report = evaluate(regions)
    text = split_report(report) + "\n" + details(report)
    assert "HELD-OUT" in text and "DEVELOPMENT" not in text
    for region in regions:
        assert f"{region.name} (held out):" in text
        for probe in region.probes:
            assert probe.id not in text and probe.question not in text


def _bench(out: Path, *args: str) -> str:
    proc = subprocess.run([sys.executable, "-m", "bench", "--smoke", "--repeat", "1", "--only", "summary_quality",
                           "--json", str(out), *args], cwd=REPO_ROOT, capture_output=True, text=True,
                          timeout=600, check=False)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_bench_reports_held_out_first_then_development_and_can_run_one_side(tmp_path: Path) -> None:
    everything = _bench(tmp_path / "all.json")
    assert everything.index("HELD-OUT regions") < everything.index("DEVELOPMENT regions")
    assert "corpus/node-memleak" in everything and "heldout=" in everything
    dev = _bench(tmp_path / "dev.json", "--split", "dev")
    assert "HELD-OUT" not in dev and "corpus/node-memleak" not in dev and "corpus/polars-migration" in dev

    # The README tables come from the results file: held-out first, per region, no probe texts.
    data = load_results(tmp_path / "all.json")
    text = markdown(data)
    assert text.index("**Held-out regions**") < text.index("**Development regions**")
    assert text.index("corpus/clinic-a11y") < text.index("before-compaction #1")
    held = [r for r in all_regions(smoke=True) if r.split == HELDOUT]
    for region in held:
        for probe in region.probes:
            assert probe.question not in text and f" {probe.id} " not in text
    stored = [n for n, r in data["model-written"].items() if r["split"] == HELDOUT]
    assert sorted(stored) == sorted(r.name for r in held if r.stored_summary)
