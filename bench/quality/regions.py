"""Regions of session files to summarize, and the request a compaction would send for them."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from compactd.compaction.prompts import SUMMARIZATION_SYSTEM_PROMPT, build_history_prompt, escape_wrapped
from compactd.compaction.serialize import serialize_messages
from compactd.samples.probes import Probe
from compactd.session import Session
from compactd.session.context import convert_to_llm, project_entry
from compactd.summarize.base import SummaryKind, SummaryRequest

RESERVE_TOKENS = 16384
HISTORY_BUDGET = math.floor(0.8 * RESERVE_TOKENS)  # S-6, as the compactor asks


@dataclass
class Region:
    """Entries [start, end) of a path, summarized with `previous_summary` (update mode when set)."""

    name: str
    source: str  # "generated" or "real"
    path: list[dict[str, Any]]
    start: int
    end: int
    probes: list[Probe]
    previous_summary: str | None = None
    stored_summary: str | None = None  # a model-written summary of exactly this region (Pi's compaction, …)
    handover: str | None = None  # a hand-written handover of the region (corpus), the reference
    tuned: bool = False  # the embedded summarizer was tuned looking at this region (= development)
    split: str = "dev"  # "dev" or "heldout", from bench/quality/split.json (see split.assign)
    notes: dict[str, Any] = field(default_factory=dict)

    def messages(self) -> list[dict[str, Any]]:
        """R-10/R-11: the first projected message of each entry; compactions skipped."""
        out: list[dict[str, Any]] = []
        for entry in self.path[self.start : self.end]:
            if entry.get("type") == "compaction":
                continue
            projected = project_entry(entry)
            if projected:
                out.append(projected[0])
        return out

    def conversation_text(self) -> str:
        return escape_wrapped(serialize_messages(self.messages()))

    def request(self) -> SummaryRequest:
        return SummaryRequest(
            kind=SummaryKind.HISTORY,
            system_prompt=SUMMARIZATION_SYSTEM_PROMPT,
            prompt=build_history_prompt(self.conversation_text(), previous_summary=self.previous_summary),
            max_tokens=HISTORY_BUDGET,
            messages=convert_to_llm(self.messages()),
            previous_summary=self.previous_summary,
        )


def load_path(file: Path) -> list[dict[str, Any]]:
    """The leaf path of a session file (v1/v2 migrated in memory; the file is never written)."""
    return Session.open(file).get_branch()


def index_of(path: list[dict[str, Any]], entry_id: str) -> int:
    for i, e in enumerate(path):
        if e.get("id") == entry_id:
            return i
    raise KeyError(entry_id)


def stored_compaction(path: list[dict[str, Any]], nth: int) -> tuple[int, dict[str, Any]]:
    """(index, entry) of the nth compaction entry on the path."""
    found = [(i, e) for i, e in enumerate(path) if e.get("type") == "compaction"]
    return found[nth]


def lines_to_path(lines: list[str]) -> list[dict[str, Any]]:
    """Entries of a linear generated session (header dropped)."""
    return [json.loads(line) for line in lines[1:]]
