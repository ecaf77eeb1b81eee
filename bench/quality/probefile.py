"""Regions described by a probe file (the corpus format): `tests/fixtures/corpus/`, the external sessions.

A probe file names a session file beside it and the entry the kept part starts at; the region is
every entry of the session's leaf path before that entry (from `firstEntryId` when given). Probes
are scored as their authors specified: a probe passes when one alternative has every expression
matching with `re.IGNORECASE | re.DOTALL` and no forbidden expression matches. compactd's probe
checker compiles with `re.IGNORECASE | re.MULTILINE`; prefixing each expression with `(?s)` adds
DOTALL, and MULTILINE changes nothing for expressions without `^`/`$` anchors — which is checked
when the file is loaded, so the two can never disagree silently.
"""

from __future__ import annotations

import re
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from compactd.samples.probes import CATEGORIES, Probe

from .regions import Region, index_of, load_path


class ProbeSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str
    category: str
    question: str
    alternatives: list[list[str]] = Field(min_length=1)
    forbidden: list[str] = []
    note: str | None = None


class ProbeFile(BaseModel):
    model_config = ConfigDict(extra="allow")  # authors' notes ("matching", "region") are kept, unused

    name: str
    session: str  # file name of the session, beside the probe file
    firstKeptEntryId: str
    firstEntryId: str | None = None  # region start (default: the first entry)
    storedSummary: str | None = None  # file beside it: a summary a model wrote of exactly this region
    storedSummaryBy: str | None = None  # who wrote it ("Claude Code /compact", "Pi with claude-…")
    probes: list[ProbeSpec] = Field(min_length=1)


_ESCAPED = re.compile(r"\\.")
_CLASS = re.compile(r"\[\^?\]?[^\]]*\]")


def has_anchor(pattern: str) -> bool:
    """Whether `pattern` uses `^` or `$` as an anchor (outside character classes, unescaped)."""
    bare = _CLASS.sub("", _ESCAPED.sub("", pattern))
    return "^" in bare or "$" in bare


def _dotall(pattern: str, where: str) -> str:
    if has_anchor(pattern):
        raise ValueError(f"{where}: anchors (^/$) are not supported in probe files: {pattern!r}")
    return "(?s)" + pattern


def to_probe(spec: ProbeSpec, where: str) -> Probe:
    if spec.category not in CATEGORIES:
        raise ValueError(f"{where}: probe {spec.id}: unknown category {spec.category!r}")
    require = tuple(tuple(_dotall(p, f"{where} {spec.id}") for p in alt) for alt in spec.alternatives)
    forbid = tuple(_dotall(p, f"{where} {spec.id}") for p in spec.forbidden)
    return Probe(spec.id, spec.category, spec.question, require, forbid=forbid)


def load_probe_file(file: Path, *, source: str, prefix: str) -> Region:
    """The region a probe file describes, with its probes, and the stored model summary and the
    hand-written handover (`<name>.handover.txt`) when present."""
    spec = ProbeFile.model_validate_json(file.read_text(encoding="utf-8"))
    where = str(file)
    path = load_path(file.parent / spec.session)
    start = index_of(path, spec.firstEntryId) if spec.firstEntryId else 0
    end = index_of(path, spec.firstKeptEntryId)
    if not start < end:
        raise ValueError(f"{where}: empty region ({spec.firstEntryId} .. {spec.firstKeptEntryId})")
    stored = (file.parent / spec.storedSummary).read_text(encoding="utf-8") if spec.storedSummary else None
    handover_file = file.parent / f"{spec.name}.handover.txt"
    handover = handover_file.read_text(encoding="utf-8") if handover_file.exists() else None
    region = Region(f"{prefix}/{spec.name}", source, path, start, end, [to_probe(p, where) for p in spec.probes],
                    stored_summary=stored, handover=handover)
    if spec.storedSummaryBy:
        region.notes["stored_by"] = spec.storedSummaryBy
    return region


def load_dir(folder: Path, *, source: str, prefix: str) -> list[Region]:
    """Every `*.probes.json` region in `folder` (none when the folder is absent), by name."""
    if not folder.is_dir():
        return []
    return [load_probe_file(f, source=source, prefix=prefix) for f in sorted(folder.glob("*.probes.json"))]
