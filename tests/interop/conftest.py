"""Fixtures for the interop suite: the installed real programs, the fake model, Pi homes and
the session files the real Pi versions write (generated once per test module)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.fake_openai import FakeOpenAI

from .harness import PI_16, PI_073, FakeModel, Install, PiHome, ensure_installed

# Every prompt carries this much text so compaction has something to cut (keepRecentTokens=300).
FILLER = " ".join(f"detail-{i} of the plan" for i in range(60))

# One scripted session per Pi version: tool calls (read, write, edit), a manual compaction, a
# split turn, a label, tree navigation with a branch summary, a threshold compaction (the fake
# model reports a near-full context for `[[big]]`), and a fork at the end.
SCENARIO: list[dict[str, Any]] = [
    {"op": "prompt", "text": f"Task one: look at [[read app.py]]. {FILLER}"},
    {"op": "prompt", "text": f"Task two: record [[write notes_a.md alpha]]. {FILLER}"},
    {"op": "prompt", "text": f"Task three: think. {FILLER}"},
    {"op": "compact"},
    {"op": "prompt", "text": f"Task four: change [[edit app.py goodbye]]. {FILLER}"},
    {"op": "label", "target": {"userText": "Task two"}, "label": "checkpoint"},
    {"op": "navigate", "target": {"userText": "Task four"}, "summarize": True},
    {"op": "prompt", "text": f"Task five on a branch: [[read notes.md]]. {FILLER}"},
    {"op": "prompt", "text": f"Task six grows the context [[big]]. {FILLER}"},
    {"op": "prompt", "text": f"Task seven after the threshold compaction. {FILLER}"},
    {"op": "prompt", "text": "Task eight: [[read big.txt]]"},
    {"op": "compact"},  # the big tool result crosses the budget: a split turn
    {"op": "prompt", "text": "Task nine is cut short [[length]]"},
    {"op": "prompt", "text": f"Task ten after the cut answer. {FILLER}"},
    {"op": "compact"},  # Pi 1.6: prepared on the edited projection (the cut answer is omitted)
    {"op": "fork", "target": {"userText": "Task five"}},
]


@pytest.fixture(scope="session")
def pi_install() -> Install:
    return ensure_installed()


@pytest.fixture(scope="module")
def fake_model() -> Iterator[FakeModel]:
    with FakeOpenAI() as fake:
        yield FakeModel(fake)


@pytest.fixture(scope="module", params=[PI_073, PI_16], ids=["pi-0.73.1", "pi-1.6.0"])
def pi_package(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture(scope="module")
def pi_home(pi_install: Install, pi_package: str, fake_model: FakeModel, tmp_path_factory: pytest.TempPathFactory) -> PiHome:
    return PiHome(pi_install, pi_package, tmp_path_factory.mktemp("pi"), fake_model.fake)


@pytest.fixture(scope="module")
def pi_written(pi_home: PiHome) -> dict[str, Any]:
    """The scenario run by the real Pi: {"sessionFile", "forks", "results"}."""
    return pi_home.drive(SCENARIO)


def session_files(written: dict[str, Any]) -> list[Path]:
    return [Path(written["sessionFile"]), *(Path(f) for f in written["forks"])]
