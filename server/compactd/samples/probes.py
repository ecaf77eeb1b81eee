"""Probes: deterministic questions about a summarized region, checked against the summary text.

After Factory Research's "Evaluating Context Compression for AI Agents" (Dec 2025): a summary is
good when questions about the history it replaced can still be answered from it. Each probe is a
question with an answer check that needs no model judge:

- `require`: alternatives of conjunctions — the probe is answered when, for at least one
  alternative, every regular expression in it matches (case-insensitive, multi-line);
- `forbid`: regular expressions that must not match — a wrong answer (a rejected plan stated as
  the decision, a resolved error still listed as blocking). A forbidden match fails the probe and
  is counted separately: a summary that misleads is worse than one that forgets;
- `within` / `forbid_within`: keywords naming the summary sections the check is limited to
  ("decision" = every section whose heading contains "decision"). A text with no Markdown
  headings at all (a raw transcript, a list of paths) is checked as a whole for `within` and
  never for `forbid_within`: structure is what makes a statement a "decision".

Patterns match within one line (`[^\\n]`) wherever a relation is asked for ("renamed A to B"), so
a bare dump of file paths cannot pass a probe that asks what happened to a file.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

__all__ = ["CATEGORIES", "Probe", "ProbeResult", "Score", "score_probes", "sections_matching"]

CATEGORIES = ("recall", "artifact", "decision", "constraint", "continuation")

_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*$", re.MULTILINE)


@dataclass(frozen=True)
class Probe:
    id: str
    category: str
    question: str
    require: tuple[tuple[str, ...], ...]
    forbid: tuple[str, ...] = ()
    within: tuple[str, ...] = ()
    forbid_within: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.category not in CATEGORIES:
            raise ValueError(f"probe {self.id}: unknown category {self.category!r}")
        if not self.require or any(not alt for alt in self.require):
            raise ValueError(f"probe {self.id}: needs at least one non-empty alternative")
        for pattern in [p for alt in self.require for p in alt] + list(self.forbid):
            _compiled(pattern)  # fail early on a bad pattern


def any_of(*patterns: str) -> tuple[tuple[str, ...], ...]:
    """`require` helper: any single pattern answers the probe."""
    return tuple((p,) for p in patterns)


@lru_cache(maxsize=4096)
def _compiled(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.IGNORECASE | re.MULTILINE)


def sections_matching(text: str, keywords: Sequence[str]) -> str | None:
    """The text of every section whose heading contains one of `keywords` (with its subsections),
    or None when the text has no Markdown headings."""
    heads = list(_HEADING.finditer(text))
    if not heads:
        return None
    parts: list[str] = []
    for i, h in enumerate(heads):
        title = h.group(2).lower()
        if not any(k.lower() in title for k in keywords):
            continue
        level = len(h.group(1))
        end = len(text)
        for later in heads[i + 1 :]:
            if len(later.group(1)) <= level:
                end = later.start()
                break
        parts.append(text[h.end() : end])
    return "\n".join(parts)


@dataclass(frozen=True)
class ProbeResult:
    probe: Probe
    passed: bool
    forbidden: str | None = None  # the forbidden text that matched, if any


@dataclass
class Score:
    results: list[ProbeResult] = field(default_factory=list)

    def extend(self, other: Score) -> None:
        self.results.extend(other.results)

    @property
    def total(self) -> int:
        return len(self.results)

    @property
    def passed(self) -> int:
        return sum(r.passed for r in self.results)

    @property
    def forbidden(self) -> int:
        return sum(r.forbidden is not None for r in self.results)

    @property
    def ratio(self) -> float:
        return self.passed / self.total if self.total else 0.0

    def by_category(self) -> dict[str, tuple[int, int]]:
        """category -> (passed, total), categories without probes left out."""
        out: dict[str, tuple[int, int]] = {}
        for c in CATEGORIES:
            rs = [r for r in self.results if r.probe.category == c]
            if rs:
                out[c] = (sum(r.passed for r in rs), len(rs))
        return out

    def failures(self) -> list[ProbeResult]:
        return [r for r in self.results if not r.passed]


def _check(probe: Probe, text: str) -> ProbeResult:
    scope = text
    if probe.within:
        found = sections_matching(text, probe.within)
        scope = text if found is None else found
    answered = any(all(_compiled(p).search(scope) for p in alt) for alt in probe.require)
    forbidden = None
    if probe.forbid:
        fscope: str | None = text
        if probe.forbid_within:
            fscope = sections_matching(text, probe.forbid_within)
        if fscope:
            for p in probe.forbid:
                m = _compiled(p).search(fscope)
                if m:
                    forbidden = m.group(0)[:200]
                    break
    return ProbeResult(probe, answered and forbidden is None, forbidden)


def score_probes(text: str, probes: Iterable[Probe]) -> Score:
    return Score([_check(p, text) for p in probes])
