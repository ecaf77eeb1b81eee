"""Generated sessions with ground truth (samples.story): deterministic, valid, and their probes are
answerable from the session itself (the truth really is in the transcript)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.quality.run import generated_regions, path_dump, raw_text
from compactd.samples.probes import CATEGORIES, score_probes
from compactd.samples.story import generate_story
from compactd.session import Session


def test_same_seed_same_bytes_other_seeds_differ() -> None:
    assert generate_story(5).text() == generate_story(5).text()
    assert len({generate_story(s).text() for s in range(1, 9)}) == 8


@pytest.mark.parametrize("seed", [1, 2])  # odd seeds start with an earlier compaction (update mode)
def test_story_is_a_valid_session_whose_region_and_cut_exist(tmp_path: Path, seed: int) -> None:
    story = generate_story(seed)
    file = tmp_path / "s.jsonl"
    file.write_text(story.text(), encoding="utf-8")
    session = Session.open(file)
    assert not session.warnings
    ids = [e["id"] for e in session.get_branch()]
    assert ids.index(story.region_start_id) < ids.index(story.first_kept_id)
    compactions = [e for e in session.get_branch() if e["type"] == "compaction"]
    if seed % 2:
        assert story.previous_summary and compactions[0]["summary"] == story.previous_summary
        assert compactions[0]["firstKeptEntryId"] == story.region_start_id
    else:
        assert story.previous_summary is None and not compactions


def test_ground_truth_is_what_the_session_contains() -> None:
    story = generate_story(2)
    t = story.truth
    text = story.text()
    calls = [b for line in story.lines[1:] for b in (json.loads(line).get("message") or {}).get("content") or []
             if isinstance(b, dict) and b.get("type") == "toolCall"]
    commands = [c["arguments"].get("command", "") for c in calls]
    (old, new), = t.renamed
    assert any(c.endswith(f"mv {old} {new}") for c in commands)  # `git mv` or `mv`
    assert any(c.endswith(f" {t.deleted[0]}") and " rm " in f" {c}" for c in commands)
    assert any(c["name"] == "write" and c["arguments"]["path"] == t.created[0] for c in calls)
    assert t.task in text and all(c in text for c in t.constraints)
    assert t.rejected_plan in text and t.chosen_plan in text
    for line, _resolved in t.errors:
        assert json.dumps(line)[1:-1] in text


def test_probes_cover_every_category_and_are_answered_by_the_transcript() -> None:
    regions = generated_regions(range(1, 7))
    for region in regions:
        assert {p.category for p in region.probes} == set(CATEGORIES)
        raw = score_probes(raw_text(region), region.probes)
        assert raw.passed == raw.total, [f.probe.id for f in raw.failures()]


def test_a_dump_of_file_paths_answers_no_probe() -> None:
    for region in generated_regions(range(1, 7)):
        dump = score_probes(path_dump(region), region.probes)
        assert dump.passed == 0, [r.probe.id for r in dump.results if r.passed]
