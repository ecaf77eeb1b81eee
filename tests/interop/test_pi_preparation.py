"""D-29 leaves Pi's files to Pi's semantics: on the files the real Pi writes, compactd's preparation
(`compat` auto → pi) equals Pi 1.6's own `prepareCompaction` on every leaf × keepRecentTokens, and its
branch preparation equals `collectEntriesForBranchSummary` + `prepareBranchEntries` of Pi 1.6 and
0.73.1 on every ordered pair of entries × budget. (0.73.1's prepareCompaction predates R-3 and the
other [PI-NEW] rules compactd follows, D-1.)"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from compactd.compaction.branch import collect_entries_for_branch_summary, prepare_branch_entries
from compactd.compaction.prepare import prepare_compaction
from compactd.compaction.settings import CompactionSettings
from compactd.engine.settings import load_settings
from compactd.session import Session
from compactd.session.tree import path_to

from .conftest import SCENARIO
from .harness import PI_16, PI_073, FakeModel, Install, PiHome
from .test_pi_context import normalized

KEEP = [1, 50, 150, 300, 600, 1000, 2000, 5000, 20000]
BUDGETS = [0, 150, 400, 2000]


def pi_preparations(home: PiHome, files: list[Path]) -> dict[str, Any]:
    request = home.session_dir.parent / "pi_prepare.json"
    request.write_text(json.dumps({"files": [str(f) for f in files], "keep": KEEP, "budgets": BUDGETS}))
    return json.loads(home._node("pi_prepare.mjs", str(request), timeout=600))


@pytest.fixture(scope="module")
def written(pi_install: Install, fake_model: FakeModel, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """{package: (files, Pi's preparations)} for both Pi versions."""
    out = {}
    for package in (PI_073, PI_16):
        home = PiHome(pi_install, package, tmp_path_factory.mktemp("pi-prep"), fake_model.fake)
        drove = home.drive(SCENARIO)
        files = [Path(drove["sessionFile"]), *(Path(f) for f in drove["forks"])]
        out[package] = (files, pi_preparations(home, files))
    return out


def test_pi_16_preparations_equal_pis_own(written: dict[str, Any], tmp_path: Path) -> None:
    files, theirs = written[PI_16]
    compared = prepared = split = 0
    for path in files:
        session = Session.open(path)
        assert load_settings(tmp_path, {}, env={}, home=tmp_path).compat_for(session) == "pi"
        for leaf, per_keep in theirs[str(path)]["prepare"].items():
            branch = path_to(session.by_id, leaf)
            for keep, result in per_keep.items():
                prep = prepare_compaction(branch, CompactionSettings(keep_recent_tokens=int(keep)))
                ours = None if not prep else {
                    "firstKeptEntryId": prep.first_kept_entry_id,
                    "isSplitTurn": prep.is_split_turn,
                    "tokensBefore": prep.tokens_before,
                    "messagesToSummarize": normalized([m for _, m in prep.summarized]),
                    "turnPrefixMessages": normalized([m for _, m in prep.turn_prefix]),
                    "previousSummary": prep.previous_summary,
                    "readFiles": prep.read_files,
                    "modifiedFiles": prep.modified_files,
                }
                expected = None if result is None else {
                    **result,
                    "messagesToSummarize": normalized(result["messagesToSummarize"]),
                    "turnPrefixMessages": normalized(result["turnPrefixMessages"]),
                }
                assert ours == expected, f"{path.name} leaf {leaf} keep {keep}"
                compared += 1
                prepared += result is not None
                split += bool(result and result["isSplitTurn"])
    assert compared >= 400 and prepared >= 100 and split >= 20


@pytest.mark.parametrize("package", [PI_073, PI_16], ids=["pi-0.73.1", "pi-1.6.0"])
def test_branch_preparations_equal_pis_own(written: dict[str, Any], package: str) -> None:
    files, theirs = written[package]
    compared = limited = 0
    for path in files:
        session = Session.open(path)
        for old_leaf, row in theirs[str(path)]["branch"].items():
            for target, per_budget in row.items():
                collection = collect_entries_for_branch_summary(session.by_id, old_leaf, target)
                for budget, result in per_budget.items():
                    prep = prepare_branch_entries(collection.entries, int(budget))
                    read_files, modified_files = prep.file_lists
                    ours = {
                        "commonAncestorId": collection.common_ancestor_id,
                        "entryIds": collection.entry_ids,
                        "messages": normalized([m.message for m in prep.messages]),
                        "totalTokens": prep.total_tokens,
                        "readFiles": read_files,
                        "modifiedFiles": modified_files,
                    }
                    assert ours == {**result, "messages": normalized(result["messages"])}, (
                        f"{path.name} {old_leaf} -> {target} budget {budget}"
                    )
                    compared += 1
                    limited += len(result["messages"]) < len(per_budget["0"]["messages"])  # the budget bit
    assert compared >= 4000 and limited >= 100
