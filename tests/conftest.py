"""Shared test fixtures: real Pi session files kept in tests/fixtures (see its README for their origin)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
# The suite tests the repository alone: the summary benchmark's external sessions are data kept on one
# machine beside the checkout (bench/quality/EXTERNAL.md), so the tests point it at a folder that never exists.
os.environ["COMPACTD_EXTERNAL_SESSIONS"] = str(REPO_ROOT / "tests" / ".no-external-sessions")
FIXTURES = REPO_ROOT / "tests" / "fixtures"
PI_FIXTURE = FIXTURES / "pi-before-compaction.v1.jsonl"
# Four more files the real Pi wrote (v1): name → path. Two hold one malformed line each.
REAL_PI_FILES = {path.stem: path for path in sorted((FIXTURES / "real-pi").glob("*.jsonl"))}


@pytest.fixture
def pi_fixture() -> Path:
    assert PI_FIXTURE.exists(), f"missing fixture {PI_FIXTURE}"
    return PI_FIXTURE


@pytest.fixture
def pi_fixture_copy(tmp_path: Path, pi_fixture: Path) -> Path:
    target = tmp_path / "session.jsonl"
    shutil.copyfile(pi_fixture, target)
    return target
