"""The paged side-panel tree (issue 14): pages reassemble exactly into the full `session/tree`
answer, whatever the shape (branches, several roots, orphans, a parentId cycle), and an index
extended by appends answers exactly as one built from scratch."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from compactd.compaction import reports
from compactd.compaction.tokens import estimate_tokens
from compactd.compaction.figures import kept_tail, summarized_entries
from compactd.engine.tree_panel import TreePanel, delta_nodes
from compactd.session.context import context_from_path, recent_path
from compactd.session import Session
from compactd.session.tree import path_to
from compactd.session.views import tree_report

Entry = dict[str, Any]


def _entry(i: int, parent: str | None, rng: random.Random, ids: list[str]) -> Entry:
    eid = f"e{i:04d}"
    ts = f"2025-01-01T00:{rng.randrange(60):02d}:{rng.randrange(60):02d}.000Z"
    base = {"id": eid, "parentId": parent, "timestamp": ts}
    roll = rng.random()
    if roll < 0.05 and ids:
        return {**base, "type": "compaction", "summary": f"summary {i}", "firstKeptEntryId": rng.choice(ids),
                "tokensBefore": 1000 + i}
    if roll < 0.1 and ids:
        return {**base, "type": "branch_summary", "summary": f"branch {i}", "fromId": rng.choice(ids)}
    if roll < 0.15 and ids:
        return {**base, "type": "label", "targetId": rng.choice(ids), "label": rng.choice(["x", "y", ""])}
    role = "user" if i % 2 else "assistant"
    return {**base, "type": "message", "message": {"role": role, "content": [{"type": "text", "text": f"t{i}\nmore"}]}}


def random_entries(seed: int, n: int) -> list[Entry]:
    rng = random.Random(seed)
    entries: list[Entry] = []
    ids: list[str] = []
    for i in range(n):
        roll = rng.random()
        if not ids or roll < 0.02:
            parent = None
        elif roll < 0.03:
            parent = "missing-" + str(i)  # an orphan: shown as a root
        elif roll < 0.25:
            parent = rng.choice(ids)  # a branch somewhere
        else:
            parent = ids[-1]
        entry = _entry(i, parent, rng, ids)
        entries.append(entry)
        ids.append(entry["id"])
    return entries


def session_of(entries: list[Entry], leaf: str | None) -> Session:
    session = Session({"type": "session", "version": 3, "id": "s", "timestamp": "t", "cwd": "/"}, entries)
    session.leaf_id = leaf
    return session


def full_nodes(session: Session) -> list[dict[str, Any]]:
    return reports.summary_figures(session, tree_report(session))["nodes"]


def page(panel: TreePanel, session: Session, **kw: Any) -> dict[str, Any]:
    return panel.page(session.entries, session.by_id, session.generation, session.leaf_id, kw.pop("limit", 3), **kw)


def whole_list(panel: TreePanel, session: Session, branch: str | None, limit: int) -> list[dict[str, Any]]:
    answer = page(panel, session, limit=limit, branch=branch, top=branch is None)["lists"][0]
    rows = list(answer["rows"])
    assert answer["hasMoreBefore"] is False
    while answer["hasMoreAfter"]:
        answer = page(panel, session, limit=limit, branch=branch, after=rows[-1]["id"])["lists"][0]
        assert answer["rows"] and len(answer["rows"]) <= limit
        rows += answer["rows"]
    return rows


def reassemble(panel: TreePanel, session: Session, limit: int) -> list[dict[str, Any]]:
    """Every node in the full tree's order, from pages only: a list's rows, and below each branch
    point the lists of its branches."""
    out: list[dict[str, Any]] = []

    def expand(branch: str | None) -> None:
        for row in whole_list(panel, session, branch, limit):
            branches = row.pop("branches", None)
            out.append(row)
            for item in branches or []:
                expand(item["first"]["id"])

    expand(None)
    return out


def subtree_sizes(nodes: list[dict[str, Any]]) -> dict[str, int]:
    by_id = {n["id"]: n for n in nodes}
    size: dict[str, int] = {}
    for node in reversed(nodes):
        size[node["id"]] = 1 + sum(size[c] for c in node["children"] if c in size)
    assert len(size) == len(by_id)
    return size


def check_branches(panel: TreePanel, session: Session, full: list[dict[str, Any]]) -> None:
    by_id = {n["id"]: n for n in full}
    sizes = subtree_sizes(full)
    for list_ in page(panel, session, limit=10_000)["lists"]:
        for row in list_["rows"]:
            if len(row["children"]) > 1:
                assert [b["first"] for b in row["branches"]] == [by_id[c] for c in row["children"]]
                assert [b["entryCount"] for b in row["branches"]] == [sizes[c] for c in row["children"]]
            else:
                assert "branches" not in row


def test_pages_reassemble_into_the_full_tree() -> None:
    for seed in range(12):
        entries = random_entries(seed, 300)
        rng = random.Random(seed)
        leaf = rng.choice(entries)["id"]
        session = session_of(entries, leaf)
        full = full_nodes(session)
        for limit in (1, 4, 50):
            assert reassemble(TreePanel(), session, limit) == full, (seed, limit)
        check_branches(TreePanel(), session, full)


def test_a_parent_cycle_is_cut_as_in_the_full_tree() -> None:
    entries = random_entries(3, 40)
    entries[10]["parentId"], entries[11]["parentId"] = entries[11]["id"], entries[10]["id"]
    session = session_of(entries, entries[-1]["id"])
    assert reassemble(TreePanel(), session, 5) == full_nodes(session)


def test_leaf_screen_lists_the_path_and_pages_around_it() -> None:
    for seed in range(8):
        entries = random_entries(100 + seed, 400)
        leaf = random.Random(seed).choice(entries)["id"]
        session = session_of(entries, leaf)
        full = {n["id"]: n for n in full_nodes(session)}
        panel = TreePanel()
        screen = page(panel, session, limit=5)
        assert screen["leafId"] == leaf and screen["entryCount"] == len(entries)
        # The lists go from the top level down to the leaf's, each through the path's row there.
        on_path = [e["id"] for e in path_to(session.by_id, leaf)]
        throughs = [p["throughId"] for p in screen["leafPath"]]
        assert throughs[-1] == leaf and all(t in on_path for t in throughs)
        assert [lst["branch"] for lst in screen["lists"]] == [p["branch"] for p in screen["leafPath"]]
        for lst, path in zip(screen["lists"], screen["leafPath"]):
            ids = [r["id"] for r in lst["rows"]]
            assert path["throughId"] in ids and ids.index(path["throughId"]) <= 4
            # Paging both ways from the screen gives the whole list.
            rows = list(lst["rows"])
            more_before, more_after = lst["hasMoreBefore"], lst["hasMoreAfter"]
            while more_before:
                got = page(panel, session, limit=7, branch=lst["branch"], before=rows[0]["id"])["lists"][0]
                rows = got["rows"] + rows
                more_before = got["hasMoreBefore"]
            while more_after:
                got = page(panel, session, limit=7, branch=lst["branch"], after=rows[-1]["id"])["lists"][0]
                rows += got["rows"]
                more_after = got["hasMoreAfter"]
            assert [r["id"] for r in rows] == [r["id"] for r in whole_list(TreePanel(), session, lst["branch"], 9)]
            for row in rows:
                row.pop("branches", None)
                assert row == full[row["id"]]


def test_appends_extend_the_index_like_a_fresh_build() -> None:
    for seed in range(6):
        everything = random_entries(200 + seed, 300)
        session = session_of(everything[:100], everything[99]["id"])
        panel = TreePanel()
        page(panel, session)  # builds the index
        built = panel._index
        for entry in everything[100:]:
            session._commit(entry)  # what an append does in memory (the leaf follows)
            if random.Random(entry["id"]).random() < 0.2:
                assert reassemble(panel, session, 6) == full_nodes(session)
        assert reassemble(panel, session, 6) == reassemble(TreePanel(), session, 6) == full_nodes(session)
        index, fresh = panel._index, TreePanel()
        page(fresh, session)
        assert index is not None and fresh._index is not None
        if index is built:  # followed every append (no orphan's parent arrived late)
            for name in ("parent", "kids", "roots", "head", "pos", "run_end", "size", "labels"):
                assert getattr(index, name) == getattr(fresh._index, name), name


def test_summarized_entries_meets_the_summary_path_like_the_full_walk() -> None:
    entries = random_entries(7, 500)
    by_id = {e["id"]: e for e in entries}
    for entry in entries:
        if entry["type"] != "branch_summary":
            continue
        on_path = {e["id"] for e in path_to(by_id, entry["id"])}
        count, current = 0, by_id.get(entry["fromId"])
        while current is not None and current["id"] not in on_path:
            count += 1
            current = by_id.get(current.get("parentId"))
        assert summarized_entries(by_id, entry) == count


def test_compaction_figures_from_the_kept_entries_equal_the_whole_projection() -> None:
    """tokensAfter walks back only to the first kept entry; the context right after the
    compaction is the same as projected from the whole recent path (kept entry on the path, off
    it, missing, the compaction itself, none; a parentId cycle)."""
    checked = 0
    for seed in range(6):
        entries = random_entries(300 + seed, 400)
        rng = random.Random(seed)
        by_id = {e["id"]: e for e in entries}
        for entry in entries:
            if entry["type"] != "compaction":
                continue
            ancestors = [e["id"] for e in path_to(by_id, entry["id"])][:-1]
            for first_kept in [*rng.sample(ancestors, min(3, len(ancestors))), "missing", entry["id"], None,
                               entry["firstKeptEntryId"]]:
                entry["firstKeptEntryId"] = first_kept
                whole = context_from_path(recent_path(by_id, entry["id"]), entry["id"]).messages
                tail = kept_tail(by_id, entry)
                assert context_from_path(tail, entry["id"]).messages == whole
                node = delta_nodes([entry], by_id, {}, entry["id"])[0]
                assert node["tokensAfter"] == sum(estimate_tokens(m) for m in whole)
                checked += 1
    assert checked > 50
    entries = random_entries(9, 60)
    entries[10]["parentId"], entries[11]["parentId"] = entries[11]["id"], entries[10]["id"]
    compaction = {"id": "c", "parentId": entries[11]["id"], "type": "compaction", "summary": "s",
                  "firstKeptEntryId": "nowhere", "timestamp": "2025-01-01T01:00:00.000Z"}
    by_id = {e["id"]: e for e in [*entries, compaction]}
    assert [e["id"] for e in kept_tail(by_id, compaction)] == [entries[10]["id"], entries[11]["id"], "c"]


def test_warm_screen_and_memos_answer_like_a_fresh_panel_and_follow_a_prune() -> None:
    entries = random_entries(41, 300)
    session = session_of(entries, entries[-1]["id"])
    warmed = TreePanel()
    warmed.warm(list(session.entries), session.by_id, session.generation, session.leaf_id)
    assert warmed._display  # the leaf's screen was computed once
    assert page(warmed, session, limit=200) == page(TreePanel(), session, limit=200)
    # A prune rewrites content in place: after forget_figures the rows show the new text.
    target = next(e for e in reversed(entries) if e["type"] == "message")
    target["message"]["content"] = [{"type": "text", "text": "pruned away"}]
    warmed.forget_figures()
    rows = [r for lst in page(warmed, session, limit=200)["lists"] for r in lst["rows"]]
    assert next(r for r in rows if r["id"] == target["id"])["preview"] == "pruned away"
    assert page(warmed, session, limit=200) == page(TreePanel(), session, limit=200)


def test_compaction_figures_compare_like_with_like() -> None:
    """A Pi compaction: both figures are chars/4 estimates (the context at its parent, from the
    whole path, and right after it); an oh-my-pi compaction: its own recorded figures, method and
    warning, as written."""
    for seed in range(4):
        entries = random_entries(500 + seed, 300)
        by_id = {e["id"]: e for e in entries}
        for entry in entries:
            if entry["type"] != "compaction" or entry["parentId"] not in by_id:
                continue
            node = delta_nodes([entry], by_id, {}, entry["id"])[0]
            parent = entry["parentId"]
            whole = context_from_path(path_to(by_id, parent), parent).messages
            assert node["contextBasis"] == "estimate"
            assert node["contextBefore"] == sum(estimate_tokens(m) for m in whole)
            assert node["contextAfter"] == node["tokensAfter"]
            assert node["contextShrank"] is (node["contextAfter"] < node["contextBefore"])
    omp = {"id": "c", "parentId": None, "type": "compaction", "summary": "Done.", "firstKeptEntryId": "c",
           "tokensBefore": 4477, "tokensAfter": 14722, "method": "handoff", "timestamp": "t",
           "warning": "Compaction freed too little context to make progress"}
    node = delta_nodes([omp], {"c": omp}, {}, "c")[0]
    assert (node["contextBasis"], node["contextBefore"], node["contextAfter"]) == ("recorded", 4477, 14722)
    assert node["contextShrank"] is False
    assert node["compactionMethod"] == "handoff" and node["compactionWarning"].startswith("Compaction freed")


def test_context_edits_name_their_target_and_mark_it() -> None:
    """A Pi 1.6 context edit reads as what it takes out (the target's kind and text, not its id);
    the message it omits carries the mark; a later replacement wins."""
    entries: list[Entry] = [
        {"id": "u", "parentId": None, "type": "message", "timestamp": "1",
         "message": {"role": "user", "content": "run the tests"}},
        {"id": "a", "parentId": "u", "type": "message", "timestamp": "2",
         "message": {"role": "assistant", "content": [{"type": "text", "text": "all green"}]}},
        {"id": "x", "parentId": "a", "type": "context_edit", "timestamp": "3", "targetId": "u", "replacement": None},
        {"id": "y", "parentId": "x", "type": "context_edit", "timestamp": "4", "targetId": "a",
         "replacement": None},
        {"id": "z", "parentId": "y", "type": "context_edit", "timestamp": "5", "targetId": "a",
         "replacement": {"content": [{"type": "text", "text": "short"}]}},
    ]
    session = session_of(entries, "z")
    rows = {r["id"]: r for r in page(TreePanel(), session, limit=10)["lists"][0]["rows"]}
    assert rows["x"]["preview"] == "context edit: omits a message: user “run the tests”"
    assert rows["z"]["preview"] == "context edit: replaces a message: assistant “all green”"
    assert rows["x"]["kind"] == "contextEdit"
    assert rows["u"]["contextEdit"] == "omitted" and rows["a"]["contextEdit"] == "replaced"
    assert all("contextEdit" not in rows[i] for i in "xyz")
    # The whole tree (`session/tree` without `limit`) reads the same: marks and previews.
    full = {n["id"]: n for n in full_nodes(session)}
    for eid, row in rows.items():
        assert {k: full[eid].get(k) for k in ("preview", "kind", "contextEdit")} == {
            k: row.get(k) for k in ("preview", "kind", "contextEdit")}, eid


REAL = Path(__file__).resolve().parents[1] / "fixtures" / "real-programs"


def test_whole_and_paged_tree_agree_on_the_files_pi_16_and_oh_my_pi_wrote() -> None:
    """Every node of the files the real Pi 1.6.0 and oh-my-pi 18.2.3 wrote is the same in the whole
    tree and in the pages, context-edit marks included: Pi 1.6 omitted its cut answer itself."""
    for name in ("pi-1.6.0-context-edits.jsonl", "oh-my-pi-18.2.3-compacted.jsonl"):
        session = Session.open(REAL / name)
        paged = reassemble(TreePanel(), session, limit=4)
        whole = full_nodes(session)
        assert [{k: v for k, v in n.items() if k != "branches"} for n in paged] == whole, name
    pi16 = {n["id"]: n for n in full_nodes(Session.open(REAL / "pi-1.6.0-context-edits.jsonl"))}
    cut = next(n for n in pi16.values() if n["preview"].startswith("This answer stops"))
    assert cut["contextEdit"] == "omitted"
    assert sorted(n["contextEdit"] for n in pi16.values() if "contextEdit" in n) == ["omitted", "replaced"]
    assert any(n["preview"] == "context edit: omits a message: assistant “This answer stops in the midd”"
               for n in pi16.values())


def test_dry_run_and_the_compaction_node_compare_the_same_estimates() -> None:
    """Like with like (issue 27): the dry run's `estimatedTokensBefore` is the `contextBefore` the
    compaction made at that leaf then shows (both the chars/4 estimate of the whole context, the
    Pi 1.6 system message and an earlier summary included), and the node's `contextAfter` is the
    dry run's kept estimate plus the new summary."""
    fixtures = Path(__file__).resolve().parents[1] / "fixtures"
    checked = 0
    for path, keep in ((REAL / "pi-1.6.0-context-edits.jsonl", 5), (fixtures / "pi-before-compaction.v1.jsonl", 2000)):
        session = Session.open(path)
        leaf = session.leaf_id
        report = reports.prepare_report(session, leaf, keep_recent_tokens=keep)
        assert report is not None
        summary = "## Goal\nThe summary the model wrote."
        entry = {"type": "compaction", "id": "new-compaction", "parentId": leaf, "timestamp": "2026-12-01T00:00:00.000Z",
                 "summary": summary, "firstKeptEntryId": report["firstKeptEntryId"], "tokensBefore": report["tokensBefore"]}
        by_id = {**session.by_id, entry["id"]: entry}
        node = delta_nodes([entry], by_id, {}, entry["id"])[0]
        assert node["contextBasis"] == "estimate"
        assert node["contextBefore"] == report["estimatedTokensBefore"], path.name
        summary_message = context_from_path([entry], entry["id"]).messages[0]
        assert node["contextAfter"] == report["estimatedTokensKept"] + estimate_tokens(summary_message), path.name
        assert report["estimatedTokensKept"] == report["estimatedTokensAfter"]  # Pi's own estimate is chars/4 too
        checked += 1
    assert checked == 2
    # The Pi 1.6 file starts with its system message: counted on both sides, not only in the tree.
    system = Session.open(REAL / "pi-1.6.0-context-edits.jsonl").entries[2]
    assert system["message"]["role"] == "system"


def test_pages_count_the_rows_they_leave_out() -> None:
    """`moreBefore` / `moreAfter`: how many rows of the list come before / after a page, so a
    panel's "Earlier entries…" row says what it stands for; the top level counts every root's run."""
    checked = 0
    for seed in range(3):
        entries = random_entries(700 + seed, 250)
        session = session_of(entries, entries[-1]["id"])
        panel = TreePanel()
        full = full_nodes(session)
        keys: list[str | None] = [None, *(c for n in full if len(n["children"]) > 1 for c in n["children"])]
        for key in keys:
            ids = [r["id"] for r in whole_list(panel, session, key, 1000)]
            for i in range(0, len(ids), 7):
                got = page(panel, session, limit=3, branch=key, after=ids[i], top=key is None)["lists"][0]
                shown = [r["id"] for r in got["rows"]]
                assert shown == ids[i + 1:i + 4]
                if not shown:
                    continue
                assert got["moreBefore"] == i + 1 and got["moreAfter"] == len(ids) - (i + 1) - len(shown)
                assert got["hasMoreBefore"] is (got["moreBefore"] > 0) and got["hasMoreAfter"] is (got["moreAfter"] > 0)
                checked += 1
        screen = page(panel, session, limit=5)
        for lst in screen["lists"]:
            assert lst["hasMoreBefore"] is (lst["moreBefore"] > 0)
    assert checked > 100
