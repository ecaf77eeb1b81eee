"""The dataclasses whose `__init__` is written out (so that mypyc compiles it) take every field by
its name and store it as given, as the generated one would: rebuilt field by field from a real
preparation and context, each is equal to the original and holds the same values."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
from compactd.compaction.file_ops import FileOperations
from compactd.compaction.prepare import CompactionPreparation, prepare_compaction
from compactd.session import Session
from compactd.session.context import SessionContext, build_session_context

FIXTURE = Path(__file__).parents[1] / "fixtures" / "real-pi" / "pi-mono-root-compact.jsonl"


def _instances() -> list[Any]:
    session = Session.open(FIXTURE)
    prep = prepare_compaction(session.get_branch())
    assert isinstance(prep, CompactionPreparation)
    return [prep, prep.cut, prep.file_ops, build_session_context(session.entries)]


@pytest.mark.parametrize("index", range(4), ids=["CompactionPreparation", "CutPointResult", "FileOperations",
                                                  "SessionContext"])
def test_a_written_init_takes_every_field_by_name(index: int) -> None:
    original = _instances()[index]
    values = {field.name: getattr(original, field.name) for field in dataclasses.fields(original)}
    made = type(original)(**values)
    assert made == original
    for name, value in values.items():
        # Compiled classes keep int and bool fields unboxed: equal, not the same object.
        assert getattr(made, name) == value if isinstance(value, (int, float)) else getattr(made, name) is value, name


def test_defaults_are_fresh_per_instance() -> None:
    assert SessionContext() == SessionContext(messages=[], entry_ids=[], thinking_level="off")
    assert SessionContext().messages is not SessionContext().messages
    assert FileOperations().read is not FileOperations().read
