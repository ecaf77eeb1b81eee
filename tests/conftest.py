"""Shared test fixtures. The real Pi session lives in ../shared beside the checkout (never copied)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED = REPO_ROOT.parent / "shared"
PI_FIXTURE = SHARED / "fixtures" / "pi-before-compaction.v1.jsonl"


@pytest.fixture
def pi_fixture() -> Path:
    assert PI_FIXTURE.exists(), f"missing shared fixture {PI_FIXTURE}"
    return PI_FIXTURE


@pytest.fixture
def pi_fixture_copy(tmp_path: Path, pi_fixture: Path) -> Path:
    target = tmp_path / "session.jsonl"
    shutil.copyfile(pi_fixture, target)
    return target
