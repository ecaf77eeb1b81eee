"""Probe checks (samples.probes) and the guards of the summary-quality benchmark on real regions."""

from __future__ import annotations

import pytest

from bench.quality.real import real_regions
from bench.quality.run import path_dump, raw_text
from compactd.samples.probes import Probe, any_of, score_probes, sections_matching

SUMMARY = """## Goal
Ship the exporter.

## Key Decisions
- **Rejected by the user**: a global cache
- **Use a cache object**: no shared state

## Next Steps
1. Run `npm run check`
### Later
- release
"""


def test_alternatives_of_conjunctions() -> None:
    p = Probe("p", "recall", "?", (("exporter", "missing"), ("Ship", "cache object")))
    assert score_probes(SUMMARY, [p]).passed == 1
    q = Probe("q", "recall", "?", (("exporter", "missing"),))
    assert score_probes(SUMMARY, [q]).passed == 0


def test_sections_by_heading_keyword_include_subsections() -> None:
    nxt = sections_matching(SUMMARY, ["next"])
    assert nxt is not None and "npm run check" in nxt and "release" in nxt and "cache" not in nxt
    assert sections_matching("no headings here", ["next"]) is None


def test_forbidden_match_is_scoped_to_its_sections_and_fails_the_probe() -> None:
    rejected = Probe("r", "decision", "?", any_of("global"), forbid=(r"^(?![^\n]*Rejected)[^\n]*global",),
                     forbid_within=("decision",))
    assert score_probes(SUMMARY, [rejected]).passed == 1
    stated = SUMMARY.replace("**Rejected by the user**: a global cache", "**Use a global cache**: simple")
    score = score_probes(stated, [rejected])
    assert score.passed == 0 and score.forbidden == 1
    # A transcript has no decision section: what it quotes is not a stated decision.
    assert score_probes("we could use a global cache", [rejected]).passed == 1


def test_within_limits_structured_text_and_falls_back_to_the_whole_of_a_transcript() -> None:
    p = Probe("n", "continuation", "?", any_of("exporter"), within=("next",))
    assert score_probes(SUMMARY, [p]).passed == 0  # mentioned, but not as a next step
    assert score_probes("next we ship the exporter", [p]).passed == 1


def test_bad_probes_are_refused() -> None:
    with pytest.raises(ValueError):
        Probe("x", "vibes", "?", any_of("a"))
    with pytest.raises(ValueError):
        Probe("x", "recall", "?", ())


@pytest.fixture(scope="module")
def regions():  # type: ignore[no-untyped-def]
    found = real_regions()
    assert len(found) == 7, "the real Pi fixtures are missing from tests/fixtures"
    return found


def test_guard_a_path_dump_scores_near_zero_on_real_regions(regions) -> None:  # type: ignore[no-untyped-def]
    passed = total = 0
    for region in regions:
        s = score_probes(path_dump(region), region.probes)
        passed, total = passed + s.passed, total + s.total
    assert total >= 70
    assert passed / total <= 0.05


def test_guard_the_raw_region_text_scores_near_full_on_real_regions(regions) -> None:  # type: ignore[no-untyped-def]
    passed = total = 0
    for region in regions:
        s = score_probes(raw_text(region), region.probes)
        passed, total = passed + s.passed, total + s.total
        assert s.forbidden == 0
    assert passed / total >= 0.95
