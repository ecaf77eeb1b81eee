"""D-29: on the files oh-my-pi 18.2.3 writes, compactd prepares compactions and branch summaries as
oh-my-pi's own exported functions do (`prepareCompaction`, `collectEntriesForBranchSummary`,
`prepareBranchEntries`, its default tokenizer, its `xml` transcript), on every leaf and pair of
entries, for several keepRecentTokens and budgets; and oh-my-pi continues a session compactd
compacted in `omp` mode, taking compactd's summary as the previous one."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from compactd.compaction import omp
from compactd.compaction.branch import collect_entries_for_branch_summary
from compactd.compaction.settings import CompactionSettings
from compactd.session import Session
from compactd.session.tree import path_to

from .conftest import FILLER
from .daemon import Daemon
from .harness import OMP, FakeModel, Install, PiHome, is_summary_request
from .test_pi_context import compactd_contexts, normalized
from .test_pi_roundtrip import DAEMON_SETTINGS, lines_of

# Prompts, tool calls (a read with a line selector too), usage above oh-my-pi's own estimate (so
# its kept budget shrinks, R-6), two manual compactions (split turns), a label, a branch summary,
# a bash run with a large output and a fork.
OMP_SCENARIO: list[dict[str, Any]] = [
    {"op": "prompt", "text": f"Task one: look at [[read app.py]]. {FILLER}"},
    {"op": "prompt", "text": f"Task two: record [[write notes_a.md alpha]]. {FILLER}"},
    {"op": "prompt", "text": f"Task three: think [[usage 9000]]. {FILLER}"},
    {"op": "compact"},
    {"op": "prompt", "text": f"Task four: change [[edit app.py goodbye]]. {FILLER}"},
    {"op": "prompt", "text": f"Task five: run [[bash big.txt]]. {FILLER}"},
    {"op": "label", "target": {"userText": "Task two"}, "label": "checkpoint"},
    {"op": "navigate", "target": {"userText": "Task four"}, "summarize": True},
    {"op": "prompt", "text": f"Task six on a branch: [[read notes.md:1-2]]. {FILLER}"},
    {"op": "prompt", "text": "Task seven: [[read big.txt]]"},
    {"op": "compact"},
    {"op": "prompt", "text": f"Task eight after the cut [[usage 3000]]. {FILLER}"},
    {"op": "fork", "target": {"userText": "Task six"}},
]
KEEP = [1, 50, 150, 300, 600, 1000, 2000, 5000, 20000]
BUDGETS = [0, 150, 400, 2000]


@pytest.fixture(scope="module")
def omp_home(pi_install: Install, fake_model: FakeModel, tmp_path_factory: pytest.TempPathFactory) -> PiHome:
    return PiHome(pi_install, OMP, tmp_path_factory.mktemp("omp-prep"), fake_model.fake)


@pytest.fixture(scope="module")
def omp_files(omp_home: PiHome) -> list[Path]:
    written = omp_home.drive(OMP_SCENARIO)
    return [Path(written["sessionFile"]), *(Path(f) for f in written["forks"])]


@pytest.fixture(scope="module")
def theirs(omp_home: PiHome, omp_files: list[Path]) -> dict[str, Any]:
    return omp_home.omp_preparations(omp_files, KEEP, BUDGETS)


def _leads(install: Install) -> list[tuple[str, str]]:
    """(oh-my-pi's words before a summary turned into a user message, compactd's): D-8 keeps the
    tags and lets the wording differ. Read from the installed templates, not copied."""
    prompts = install.root / "node_modules" / "@oh-my-pi" / "pi-agent-core" / "src" / "compaction" / "prompts"
    out = []
    for name, tag, ours in (("branch-summary-context.md", "<summary>", omp.BRANCH_LEAD),
                            ("compaction-summary-context.md", "<summary>", omp.COMPACTION_LEAD),
                            ("handoff-summary-context.md", "<handoff>", omp.HANDOFF_LEAD)):
        lead = (prompts / name).read_text().split(f"\n\n{tag}")[0]
        assert lead and "{{" not in lead
        out.append((lead, ours))
    return out


def _their_text(text: str | None, leads: list[tuple[str, str]]) -> str | None:
    if text is None:
        return None
    for lead, ours in leads:
        text = text.replace(f"Human: {lead}\n\n", f"Human: {ours}\n\n")
    return text


def _ours_prepared(path: list[dict[str, Any]], keep: int) -> dict[str, Any] | None:
    prep = omp.prepare_omp(path, CompactionSettings(keep_recent_tokens=keep))
    if not prep:
        return None
    return {
        "firstKeptEntryId": prep.first_kept_entry_id,
        "isSplitTurn": prep.is_split_turn,
        "tokensBefore": prep.tokens_before,
        "messagesToSummarize": normalized([m for _, m in prep.summarized]),
        "turnPrefixMessages": normalized([m for _, m in prep.turn_prefix]),
        "recentMessages": normalized([m for _, m in prep.kept]),
        "previousSummary": prep.previous_summary,
        "readFiles": prep.read_files,
        "modifiedFiles": prep.modified_files,
        "conversationText": prep.conversation_text,
        "turnPrefixText": prep.turn_prefix_text,
    }


def _normalized_theirs(result: dict[str, Any] | None, leads: list[tuple[str, str]]) -> dict[str, Any] | None:
    if result is None:
        return None
    out = dict(result)
    for key in ("messagesToSummarize", "turnPrefixMessages", "recentMessages", "messages"):
        if key in out:
            out[key] = normalized(out[key])
    for key in ("conversationText", "turnPrefixText"):
        if key in out:
            out[key] = _their_text(out[key], leads)
    return out


def test_omp_picks_the_xml_dialect_and_wrote_what_the_comparison_needs(theirs: dict[str, Any], omp_files: list[Path]) -> None:
    assert theirs["dialect"] == "xml"  # the fake model is unknown to oh-my-pi
    kinds = [json.loads(line)["type"] for line in omp_files[0].read_text().splitlines()]
    assert kinds[0] == "title" and kinds.count("compaction") == 2 and "branch_summary" in kinds


def _budget_shrinks(branch: list[dict[str, Any]]) -> bool:
    """R-6 is at work on this leaf: the latest usage's prompt exceeds oh-my-pi's estimate."""
    usage = omp.last_assistant_usage(branch)
    if usage is None:
        return False
    _, start = omp._boundary(branch)
    messages = [m for m in map(omp._prepare_message, branch[start:]) if m is not None]
    estimate = omp.count_messages(messages)
    return estimate > 0 and omp.prompt_tokens(usage) / estimate > 1


def test_every_preparation_equals_omps_own(omp_install_leads: list[tuple[str, str]], theirs: dict[str, Any],
                                          omp_files: list[Path]) -> None:
    compared = prepared = split = shrunk = 0
    for path in omp_files:
        session = Session.open(path)
        for leaf, per_keep in theirs[str(path)]["prepare"].items():
            branch = path_to(session.by_id, leaf)
            for keep, result in per_keep.items():
                ours = _ours_prepared(branch, int(keep))
                assert ours == _normalized_theirs(result, omp_install_leads), f"{path.name} leaf {leaf} keep {keep}"
                compared += 1
                if result is not None:
                    prepared += 1
                    split += result["isSplitTurn"]
            shrunk += _budget_shrinks(branch)
    assert compared == sum(len(r["prepare"]) for k, r in theirs.items() if k != "dialect") * len(KEEP)
    assert compared >= 300 and prepared >= 100 and split >= 10 and shrunk >= 10


def test_every_branch_preparation_equals_omps_own(omp_install_leads: list[tuple[str, str]], theirs: dict[str, Any],
                                                 omp_files: list[Path]) -> None:
    compared = with_tool_results = limited = 0
    for path in omp_files:
        session = Session.open(path)
        for old_leaf, row in theirs[str(path)]["branch"].items():
            for target, per_budget in row.items():
                collection = collect_entries_for_branch_summary(session.by_id, old_leaf, target)
                for budget, result in per_budget.items():
                    prep = omp.prepare_branch_entries_omp(collection.entries, int(budget))
                    read_files, modified_files = prep.file_lists
                    messages = [m.message for m in prep.messages]
                    ours = {
                        "commonAncestorId": collection.common_ancestor_id,
                        "entryIds": collection.entry_ids,
                        "messages": normalized(messages),
                        "totalTokens": prep.total_tokens,
                        "readFiles": read_files,
                        "modifiedFiles": modified_files,
                        "conversationText": omp.serialize_for_summary(messages),
                    }
                    assert ours == _normalized_theirs(result, omp_install_leads), (
                        f"{path.name} {old_leaf} -> {target} budget {budget}"
                    )
                    compared += 1
                    with_tool_results += any(m.get("role") == "toolResult" for m in messages)
                    limited += int(budget) > 0 and len(messages) < len(result["entryIds"])
    assert compared >= 2000 and with_tool_results >= 100 and limited >= 100


@pytest.fixture(scope="module")
def omp_install_leads(pi_install: Install) -> list[tuple[str, str]]:
    return _leads(pi_install)


def test_the_daemon_answers_omps_dry_run_on_omps_file(omp_home: PiHome, fake_model: FakeModel,
                                                      omp_install_leads: list[tuple[str, str]],
                                                      theirs: dict[str, Any], omp_files: list[Path]) -> None:
    path = omp_files[0]
    session = Session.open(path)
    expected = _normalized_theirs(theirs[str(path)]["prepare"][session.leaf_id]["300"], omp_install_leads)
    assert expected is not None
    with Daemon(fake_model.fake, str(omp_home.agent_dir), DAEMON_SETTINGS) as daemon:
        sid = daemon.call("session/open", {"path": str(path)})["sessionId"]
        answer = daemon.call("session/prepareCompaction", {"sessionId": sid, "keepRecentTokens": 300})
        stats = daemon.call("session/tokenStats", {"sessionId": sid})
        tree = daemon.call("session/tree", {"sessionId": sid})
    assert answer["compat"] == stats["compat"] == tree["compat"] == "omp"  # auto: the title slot line
    for key in ("firstKeptEntryId", "isSplitTurn", "tokensBefore", "readFiles", "modifiedFiles", "conversationText",
                "turnPrefixText", "previousSummary"):
        assert answer[key] == expected[key], key
    assert [m["role"] for m in answer["messagesToSummarize"]] == [m["role"] for m in expected["messagesToSummarize"]]
    assert [m["role"] for m in answer["turnPrefixMessages"]] == [m["role"] for m in expected["turnPrefixMessages"]]


# --- the round trip ------------------------------------------------------------------------------


def test_omp_continues_a_session_compactd_compacted_and_builds_on_its_summary(
    omp_home: PiHome, fake_model: FakeModel, omp_files: list[Path], tmp_path: Path
) -> None:
    path = tmp_path / omp_files[0].name
    path.write_bytes(omp_files[0].read_bytes())
    before = lines_of(path)
    with Daemon(fake_model.fake, str(omp_home.agent_dir), DAEMON_SETTINGS) as daemon:
        sid = daemon.call("session/open", {"path": str(path)})["sessionId"]
        daemon.call("session/append", {"sessionId": sid, "entries": [
            {"type": "message", "message": {"role": "user", "content": [{"type": "text", "text": f"Task nine. {FILLER}"}],
                                            "timestamp": 1}}]})
        result = daemon.call("session/compact", {"sessionId": sid})
    assert result["compat"] == "omp"
    after = lines_of(path)
    assert after[: len(before)] == before  # oh-my-pi's lines untouched
    entry = json.loads(after[-1])
    # Written as oh-my-pi writes its own (QO-6): no Pi-only fields, its short summary and figures.
    assert list(entry) == ["type", "id", "parentId", "timestamp", "summary", "shortSummary", "firstKeptEntryId",
                           "tokensBefore", "tokensAfter", "method", "details", "fromExtension"]
    assert entry["method"] == "soft" and entry["fromExtension"] is False
    assert re.search(r"\n\n<files>\n(.+\n)+</files>\Z", entry["summary"]) and "<read-files>" not in entry["summary"]
    assert entry["shortSummary"] and "\n" not in entry["shortSummary"]

    # oh-my-pi builds the same context on the new leaf as compactd ...
    theirs_ctx = omp_home.contexts(path)[str(path)][entry["id"]]
    assert normalized(compactd_contexts(path)[entry["id"]]["messages"]) == normalized(theirs_ctx["messages"])

    # ... continues the session and, compacting again, hands compactd's summary to its model as
    # the previous one.
    seen = len(fake_model.fake.requests)
    omp_home.drive([{"op": "prompt", "text": f"Task ten after compactd. {FILLER}"}, {"op": "compact"}], session_file=path)
    summary_requests = [r for r in fake_model.fake.requests[seen:] if is_summary_request(r)]
    prompts = [json.dumps(r.body) for r in summary_requests]
    previous = json.dumps(f"<previous-summary>\n{entry['summary']}\n</previous-summary>")[1:-1]
    assert any(previous in p for p in prompts)
    kinds = [json.loads(line)["type"] for line in path.read_text().splitlines()]
    assert kinds.count("compaction") == 4  # oh-my-pi's two, compactd's, and oh-my-pi's after it
