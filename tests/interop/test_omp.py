"""oh-my-pi 18.2.3 (under bun): the files it writes — a title slot line before the header, its own
entry types and compaction fields — open in compactd with the context oh-my-pi itself builds for
every leaf, and survive compactd's writes byte for byte."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from compactd.session import Session

from .conftest import FILLER
from .daemon import Daemon
from .harness import OMP, FakeModel, Install, PiHome
from .test_pi_context import compactd_contexts, normalized
from .test_pi_roundtrip import DAEMON_SETTINGS, lines_of

OMP_SCENARIO: list[dict[str, Any]] = [
    {"op": "prompt", "text": f"Task one: look at [[read app.py]]. {FILLER}"},
    {"op": "prompt", "text": f"Task two: record [[write notes_a.md alpha]]. {FILLER}"},
    {"op": "prompt", "text": f"Task three: think. {FILLER}"},
    {"op": "compact"},
    {"op": "prompt", "text": f"Task four: run [[bash big.txt]]. {FILLER}"},
    {"op": "label", "target": {"userText": "Task two"}, "label": "checkpoint"},
    {"op": "navigate", "target": {"userText": "Task four"}, "summarize": True},
    {"op": "prompt", "text": f"Task five on a branch. {FILLER}"},
    {"op": "fork", "target": {"userText": "Task five"}},
]


@pytest.fixture(scope="module")
def omp_home(pi_install: Install, fake_model: FakeModel, tmp_path_factory: pytest.TempPathFactory) -> PiHome:
    return PiHome(pi_install, OMP, tmp_path_factory.mktemp("omp"), fake_model.fake)


@pytest.fixture(scope="module")
def omp_written(omp_home: PiHome) -> dict[str, Any]:
    return omp_home.drive(OMP_SCENARIO)


def test_omp_wrote_its_own_format(omp_written: dict[str, Any]) -> None:
    lines = [json.loads(line) for line in Path(omp_written["sessionFile"]).read_text().splitlines()]
    assert lines[0]["type"] == "title" and lines[1]["type"] == "session"
    kinds = [e["type"] for e in lines]
    assert "compaction" in kinds and "branch_summary" in kinds and "label" in kinds
    compaction = next(e for e in lines if e["type"] == "compaction")
    assert "method" in compaction and "tokensAfter" in compaction


def settled(messages: list[dict[str, Any]]) -> bool:
    """Every tool call answered. oh-my-pi (not Pi) strips unanswered calls from the model context;
    a leaf between a call and its result is a moment inside one turn, never a place to resume."""
    answered = {m.get("toolCallId") for m in messages if m["role"] == "toolResult"}
    return all(
        block.get("id") in answered
        for m in messages if m["role"] == "assistant"
        for block in m.get("content") or [] if block.get("type") == "toolCall"
    )


def test_context_of_every_settled_leaf_equals_omp(omp_home: PiHome, omp_written: dict[str, Any]) -> None:
    files = [Path(omp_written["sessionFile"]), *(Path(f) for f in omp_written["forks"])]
    theirs = omp_home.contexts(*files)
    compared = 0
    for path in files:
        ours = compactd_contexts(path)
        assert set(ours) == set(theirs[str(path)])
        for leaf, omp_ctx in theirs[str(path)].items():
            if not settled(ours[leaf]["messages"]):
                continue
            assert normalized(ours[leaf]["messages"]) == normalized(omp_ctx["messages"]), f"{path.name} leaf {leaf}"
            compared += 1
    assert compared >= 10


def test_omp_lines_survive_compactd_writes(omp_home: PiHome, fake_model: FakeModel, omp_written: dict[str, Any]) -> None:
    path = Path(omp_written["sessionFile"])
    before = lines_of(path)
    with Daemon(fake_model.fake, str(omp_home.agent_dir), DAEMON_SETTINGS) as daemon:
        opened = daemon.call("session/open", {"path": str(path)})
        daemon.call("session/compact", {"sessionId": opened["sessionId"]})
    after = lines_of(path)
    assert after[: len(before)] == before  # title slot, header and oh-my-pi's entries untouched
    session = Session.open(path)
    compactions = [e for e in session.entries if e["type"] == "compaction"]
    assert "method" in compactions[0] and "tokensAfter" in compactions[0]  # oh-my-pi's fields kept
    assert compactions[-1]["parentId"] in session.by_id
