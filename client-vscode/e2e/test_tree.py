"""The session tree at scale, in the real VS Code at its DEFAULT side-bar width (issue 27): a
deeply branched 20k-entry session, session files written by the real Pi 1.6.0 (context edits) and
oh-my-pi 18.2.3 (its compaction), plus spec-shaped ones for what those programs do not write
offline; the picker, labels, entry documents and compaction figures. Every step asserts on what the page shows;
screenshots go to the output folder. Runs after test_extension.py on the same code-server (or starts
it when run alone: `run.sh -k test_tree`)."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .conftest import PAGES, Editor, error_records
from .sessions import DEEP_NAME, LEAF_TEXT, OMP_HANDOFF_TITLE, deep_branched, oh_my_pi, pi16
from .workbench import TREE_PANE, Workbench

# Written by the real Pi 1.6.0 and oh-my-pi 18.2.3 (make_real_sessions.py, tests/fixtures/README.md).
REAL = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "real-programs"
REAL_PI16 = REAL / "pi-1.6.0-context-edits.jsonl"
REAL_OMP = REAL / "oh-my-pi-18.2.3-compacted.jsonl"
REAL_PI16_FIRST = "Read app.py and tell me what it prints"
REAL_OMP_TITLE = "Refactor the notes loader"

SETTINGS = {"compactd.summarizer": {"backend": "extractive"},
            # Keep almost nothing, so the small Pi 1.6 session has something to compact.
            "compactd.settings": {"compaction": {"keepRecentTokens": 5}}}


def session_dir(editor: Editor) -> Path:
    encoded = "--" + str(editor.workspace).lstrip("/").replace("/", "-") + "--"
    return editor.agent / "sessions" / encoded


def in_workspace(source: Path, target: Path, workspace: Path) -> Path:
    """A copy of a file a real program wrote, as if written in this workspace: the picker lists the
    sessions whose header names the workspace as cwd (as Pi does), so the header's `cwd` is the one
    field changed; every other line is copied byte for byte."""
    lines = source.read_bytes().splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if json.loads(line).get("type") == "session")
    header = json.loads(lines[at])
    header["cwd"] = str(workspace)
    lines[at] = (json.dumps(header, separators=(",", ":")) + "\n").encode()
    target.write_bytes(b"".join(lines))
    return target


@pytest.fixture(scope="module")
def files(editor: Editor) -> dict[str, Path]:
    folder = session_dir(editor)
    folder.mkdir(parents=True, exist_ok=True)
    return {
        "real-pi16": in_workspace(REAL_PI16, folder / "2026-11-30T08-00-00-000Z_real-pi-1.6.0.jsonl", editor.workspace),
        "real-omp": in_workspace(REAL_OMP, folder / "2026-11-30T08-30-00-000Z_real-oh-my-pi.jsonl", editor.workspace),
        "deep": deep_branched(folder / "2026-11-30T09-00-00-000Z_0199a0b0-deep-branched.jsonl", editor.workspace),
        "pi16": pi16(folder / "2026-11-30T10-00-00-000Z_0199b1c2-pi16-session.jsonl", editor.workspace),
        "omp": oh_my_pi(folder / "2026-11-30T11-00-00-000Z_0199c2d3-omp-session.jsonl", editor.workspace),
    }


@pytest.fixture(scope="module")
def bench(editor: Editor, browser: Any, shots: Path, files: dict[str, Path]) -> Iterator[Workbench]:
    settings = {"compactd.interpreter": editor.python, **SETTINGS}
    if editor.proc is None:  # run alone
        editor.write_settings(settings)
        editor.start()
    # A new window at the default layout: no side-bar drag here.
    context = browser.new_context(viewport={"width": 1400, "height": 900},
                                  permissions=["clipboard-read", "clipboard-write"])
    page = context.new_page()
    page.goto(f"{editor.url}/?folder={editor.workspace}")
    page.locator("#workbench\\.parts\\.statusbar").wait_for(state="visible", timeout=90_000)
    page.locator(".activitybar a[aria-label='compactd']").wait_for(state="visible", timeout=60_000)
    bench = Workbench(page, shots)
    if editor.settings_file.exists() and '"keepRecentTokens"' not in editor.settings_file.read_text():
        bench.edit_user_settings(editor.settings(settings), editor.settings_file)
    PAGES.append(bench)
    yield bench
    PAGES.remove(bench)
    context.close()


def open_from_picker(bench: Workbench, title: str) -> str:
    """Open a session through the picker by its title; the picker row's text."""
    bench.command("compactd: Open Session File…")
    bench.wait_quick_input("Open a session")
    row = bench.page.locator(".quick-input-widget .monaco-list-row").filter(has_text=title).first
    row.wait_for(state="visible")
    text = " ".join(row.inner_text().split())
    row.click()
    return text


def label_visible(bench: Workbench, chars: int) -> dict[str, float]:
    """Where the first `chars` characters of the selected row's label are drawn, and the tree's right edge."""
    return bench.page.evaluate(
        """([pane, chars]) => {
            const row = document.querySelector(pane + ' .monaco-list-row[aria-selected="true"]');
            const label = row.querySelector('.label-name');
            const node = [...label.querySelectorAll('*'), label].flatMap((e) => [...e.childNodes])
                .find((n) => n.nodeType === 3 && n.textContent.length > 0);
            const range = document.createRange();
            range.setStart(node, 0);
            range.setEnd(node, Math.min(chars, node.textContent.length));
            const r = range.getBoundingClientRect();
            const list = document.querySelector(pane + ' .monaco-list').getBoundingClientRect();
            const bar = document.querySelector('#workbench\\\\.parts\\\\.sidebar').getBoundingClientRect();
            return {left: r.left, right: r.right, width: r.width, listLeft: list.left, listRight: list.right,
                    sidebar: bar.width};
        }""", [TREE_PANE, chars])


def context_menu(bench: Workbench, row_pattern: str, item: str) -> None:
    bench.context_menu(row_pattern, item)


def scroll_to_row(bench: Workbench, pattern: str, key: str, tries: int = 40) -> None:
    """Move the focus through the (virtual) list with `key` until a row matching `pattern` is drawn."""
    for _ in range(tries):
        if any(re.search(pattern, r.text) for r in bench.tree_rows()):
            return
        bench.page.keyboard.press(key)
        bench.page.wait_for_timeout(150)
    raise AssertionError(f"no row matching {pattern!r} after {tries} x {key}")


def entries(path: Path) -> int:
    """Entries of a session file (every line with an id: not the header, not oh-my-pi's title slot)."""
    return sum(1 for line in path.read_text().splitlines() if line.strip() and "id" in json.loads(line)
               and json.loads(line).get("type") != "session")


def sticky_rows(bench: Workbench) -> int:
    return bench.page.locator(f"{TREE_PANE} .monaco-tree-sticky-row").count()


def test_a_picker_lists_name_date_size_and_entries(bench: Workbench, files: dict[str, Path]) -> None:
    bench.command("compactd: Open Session File…")
    bench.wait_quick_input("Open a session")
    rows = bench.page.locator(".quick-input-widget .monaco-list-row")
    rows.filter(has_text=DEEP_NAME).first.wait_for(state="visible")
    texts = [" ".join(t.split()) for t in rows.all_inner_texts()]
    bench.screenshot("picker")
    deep = next(t for t in texts if DEEP_NAME in t)
    # Name, date, size and entry count; no bare UUID as the label.
    assert re.search(r"\d{1,2}/\d{1,2}/\d{4}.* · [\d.]+M?k?B · 20,801 entries", deep), deep
    assert any(t.startswith(OMP_HANDOFF_TITLE) and "12 entries" in t for t in texts), texts  # oh-my-pi title
    assert any(t.startswith("paste the whole 4 MB log here please") for t in texts), texts  # first request
    # The files the real programs wrote: oh-my-pi's title, Pi 1.6's first request, their entry counts.
    assert any(t.startswith(REAL_OMP_TITLE) and f"{entries(REAL_OMP)} entries" in t for t in texts), texts
    assert any(t.startswith(REAL_PI16_FIRST) and f"{entries(REAL_PI16)} entries" in t for t in texts), texts
    assert not any(re.match(r"^0199", t) for t in texts), texts
    bench.page.keyboard.press("Escape")


def test_b_deep_branched_20k_session_leaf_visible_at_default_width(bench: Workbench) -> None:
    open_from_picker(bench, DEEP_NAME)
    leaf = bench.wait_for_row(rf"^● leaf · {re.escape(LEAF_TEXT)}", timeout=60, selected=True)
    # 25 branch points on the path, and the leaf is a top-level row.
    assert leaf.level == 1
    rows = bench.tree_rows()
    assert all(r.level == 1 for r in rows), [(r.text, r.level) for r in rows if r.level != 1]
    # The marker and the start of the text are drawn inside the list at the default width.
    where = label_visible(bench, len("● leaf · Done: the upload retry"))
    print("SIDEBAR", where)
    assert where["sidebar"] < 400, where  # the default side bar, not a widened one
    assert where["width"] > 0 and where["listLeft"] <= where["left"] and where["right"] <= where["listRight"], where
    assert sticky_rows(bench) == 0  # nothing is an ancestor of the path's rows
    bench.screenshot("deep-20k-leaf-default-width")
    # The row is cut at this width; its tooltip carries the whole text and the date.
    tip = bench.hover_text(r"^● leaf · ", LEAF_TEXT)
    assert LEAF_TEXT in tip and re.search(r"\d{4}", tip), tip
    bench.screenshot("deep-20k-leaf-tooltip")
    bench.page.keyboard.press("Escape")


def test_c_earlier_entries_and_other_branches(bench: Workbench) -> None:
    bench.click_row(r"^● leaf")
    bench.page.keyboard.press("Home")
    # Each stretch of the path between branch points has one row for its entries not loaded yet,
    # saying how many: no two such rows in a row, no two alike.
    first = bench.wait_for_row(r"^[\d,]+ earlier entries…")
    assert first.level == 1
    shown = [r.text for r in bench.tree_rows()]
    gaps = [t for t in shown if re.match(r"^[\d,]+ earlier entries…", t)]
    assert gaps and not [t for t in shown if t.startswith("Earlier entries")], shown
    assert not [a for a, b in zip(shown, shown[1:]) if "earlier entries…" in a and "earlier entries…" in b], shown
    assert sticky_rows(bench) == 0  # the click below lands on the row, not on a pinned header
    bench.screenshot("deep-20k-earlier-entries")
    before = {r.text for r in bench.tree_rows()}
    bench.click_row(r"^[\d,]+ earlier entries…")
    deadline = time.monotonic() + 15
    while not [r for r in bench.tree_rows() if re.match(r"^main turn \d+: ", r.text) and r.text not in before]:
        assert time.monotonic() < deadline, bench.tree_rows()
        time.sleep(0.2)
    # A branch point on the path (the last one, ~200 rows above the leaf): its other branch as a
    # collapsed group, flat inside.
    bench.page.keyboard.press("End")
    scroll_to_row(bench, r"^⎇ 1 other branch · ", "PageUp")
    assert sticky_rows(bench) == 0
    point = bench.wait_for_row(r"^⎇ 1 other branch · ")
    assert point.level == 1 and point.expanded is False
    bench.click_row(r"^⎇ 1 other branch · ")
    bench.page.keyboard.press("ArrowRight")
    group = bench.wait_for_row(r"^Branch 1 of 2 · \d{3} entries · user: attempt \d+ turn 0")
    assert group.level == 2 and group.expanded is False
    bench.click_row(r"^Branch 1 of 2 · ")
    bench.page.keyboard.press("ArrowRight")
    inside = bench.wait_for_row(r"^attempt \d+ turn 2: check the upload retry")
    assert inside.level == 3
    nested = bench.wait_for_row(r"^⎇ 2 branches · attempt \d+ ")
    assert nested.level == 3
    bench.screenshot("deep-20k-other-branch-open")
    bench.command("compactd: Reveal Current Leaf")
    bench.wait_for_row(r"^● leaf · ", selected=True)


def test_d_label_shows_on_its_entry_not_as_a_row(bench: Workbench, files: dict[str, Path]) -> None:
    size = files["deep"].stat().st_size
    context_menu(bench, r"^● leaf", "Set Label…")
    bench.wait_quick_input("Label: ● leaf")
    bench.type_in_quick_input("checkpoint-A")
    leaf = bench.wait_for_row(rf"^● leaf · \[checkpoint-A\] · {re.escape(LEAF_TEXT)}", timeout=20)
    assert leaf.level == 1
    assert files["deep"].stat().st_size > size  # the label entry was appended (and is the file's leaf)
    assert not [r.text for r in bench.tree_rows() if r.text.startswith(("label", "[checkpoint-A] · label"))]
    bench.screenshot("label-on-entry")


def test_e_pi16_context_edits_read_as_text(bench: Workbench) -> None:
    open_from_picker(bench, "paste the whole 4 MB log here please")
    bench.wait_for_row(r"^● leaf · Fixed the parser; tests pass\.", timeout=30, selected=True)
    omitted = bench.wait_for_row(r"^⊘ omitted from context · paste the whole 4 MB log here please")
    replaced = bench.wait_for_row(r"^✎ replaced in context · Here is the log")
    bench.wait_for_row(r"^context edit: omits a message: user “paste the whole 4 MB log here please”")
    bench.wait_for_row(r"^context edit: replaces a message: assistant “Here is the log")
    bench.wait_for_row(r"^usage: cache warm · openai/gpt-4o · 940 tokens")
    bench.wait_for_row(r"^system: sections: preamble, cwd; tools \+read")
    assert omitted.level == replaced.level == 1
    texts = [r.text for r in bench.tree_rows()]
    assert not [t for t in texts if "None" in t or "[context" in t or re.search(r"\ba100000\w\b", t)], texts
    bench.screenshot("pi16-context-edits")
    # The answer as a document: text, thinking and date readable, no JSON of the message.
    context_menu(bench, "Here is the log", "Show Entry")
    doc = bench.wait_for_webview_text("Assistant answer")
    assert "Written: 2026-" in doc and "The log is huge; summarise it instead." in doc, doc
    assert '"role"' not in doc and "1,796" not in doc, doc
    bench.screenshot("entry-document")


def test_e2_real_pi16_context_edits(bench: Workbench) -> None:
    """The file the real Pi 1.6.0 wrote: it omitted its own answer cut by the length limit, and an
    extension's call replaced an earlier answer; both targets carry their mark, both edits name them."""
    open_from_picker(bench, REAL_PI16_FIRST)
    bench.wait_for_row(r"^● leaf · Done with the tool\.", timeout=30, selected=True)
    omitted = bench.wait_for_row(r"^⊘ omitted from context · This answer stops in the midd")
    replaced = bench.wait_for_row(r"^✎ replaced in context · Done with the tool\.")
    bench.wait_for_row(r"^context edit: omits a message: assistant “This answer stops in the midd”")
    bench.wait_for_row(r"^context edit: replaces a message: assistant “Done with the tool\.”")
    bench.wait_for_row(r"^system: sections: preamble, tools, rules, docs, cwd; tools \+read, bash, edit, write")
    bench.wait_for_row(r"^read\(app\.py\)")
    assert omitted.level == replaced.level == 1
    texts = [r.text for r in bench.tree_rows()]
    assert not [t for t in texts if "None" in t or "[context" in t], texts
    assert not [t for t in texts if re.search(r"\b[0-9a-f]{8}\b", t)], texts  # no bare entry ids
    bench.screenshot("real-pi16-context-edits")


def test_f1_real_oh_my_pi_compaction_as_recorded(bench: Workbench) -> None:
    """The file the real oh-my-pi 18.2.3 wrote: its /compact with the tokensAfter and method it
    recorded (its tokensAfter counts the system prompt and tools, so it exceeds tokensBefore)."""
    compaction = next(e for e in map(json.loads, REAL_OMP.read_text().splitlines()) if e.get("type") == "compaction")
    before, after, method = compaction["tokensBefore"], compaction["tokensAfter"], compaction["method"]
    open_from_picker(bench, REAL_OMP_TITLE)
    bench.wait_for_row(r"^● leaf · ", timeout=30, selected=True)
    shrank = "" if after < before else r" · ⚠ did not shrink"
    row = bench.wait_for_row(rf"^Compaction \({method}\) · {k(before)} → {k(after)} tokens \(recorded\){shrank}")
    assert row.level == 1
    bench.wait_for_row(r"^tool started: read")
    bench.wait_for_row(r"^title: " + re.escape(REAL_OMP_TITLE))
    texts = [r.text for r in bench.tree_rows()]
    assert not [t for t in texts if "None" in t], texts
    bench.screenshot("real-oh-my-pi-session")
    bench.click_row(r"^Compaction \(")
    doc = bench.wait_for_webview_text(f"Tokens after (recorded): {after:,}", timeout=40)
    assert f"Tokens after (recorded): {after:,}" in doc and f"Method: {method}" in doc, doc
    bench.screenshot("real-oh-my-pi-compaction-document")


def k(n: int) -> str:
    """formatTokens (client-vscode/src/core/render.ts) for the sizes used here, as a pattern."""
    if n < 1000:
        return str(n)
    v = n / 1000
    return re.escape(f"{round(v)}k" if v >= 100 or v == int(v) else f"{v:.1f}k")


def test_f_oh_my_pi_figures_as_recorded(bench: Workbench) -> None:
    open_from_picker(bench, OMP_HANDOFF_TITLE)
    bench.wait_for_row(r"^● leaf · Refactored the loader", timeout=30, selected=True)
    bench.wait_for_row(r"^Compaction \(handoff\) · 4\.5k → 14\.7k tokens \(recorded\) · ⚠ did not shrink")
    bench.wait_for_row(r"^thinking: auto \(no fixed level\)")
    bench.wait_for_row(r"^\(thinking, text not kept\)")
    bench.wait_for_row(r"^tool started: read")
    bench.wait_for_row(r"^usage: title · openai/gpt-4o-mini · 940 tokens")
    texts = [r.text for r in bench.tree_rows()]
    assert not [t for t in texts if "None" in t], texts
    bench.screenshot("oh-my-pi-session")
    bench.click_row(r"^Compaction \(handoff\)")
    doc = bench.wait_for_webview_text("Tokens after (recorded): 14,722", timeout=40)
    assert "Tokens after (recorded): 14,722" in doc and "Method: handoff" in doc, doc
    assert "Warning recorded: Compaction freed too little context" in doc, doc
    assert doc.count("Details") == 0 and doc.count("Files read") == 1, doc
    bench.screenshot("oh-my-pi-compaction-document")


def test_g_compaction_that_would_not_shrink_is_said_before_and_after(bench: Workbench) -> None:
    open_from_picker(bench, "paste the whole 4 MB log here please")
    bench.wait_for_row(r"^● leaf · ", timeout=30, selected=True)
    bench.command("compactd: Show What Compaction Would Do")
    try:
        doc = bench.wait_for_webview_text("What compaction would do", timeout=30)
    except AssertionError:  # a preview left blank on a busy machine: ask once more
        bench.screenshot("dry-run-blank-preview")
        bench.command("compactd: Show What Compaction Would Do")
        doc = bench.wait_for_webview_text("What compaction would do", timeout=40)
    now = re.search(r"Context now, estimated: about ([\d,]+) tokens; kept after compaction: about [\d,]+ tokens", doc)
    assert now, doc
    assert "Both are characters ÷ 4 estimates of what the model gets" in doc, doc
    assert "Warning: this compaction would probably not shrink the context." in doc, doc
    assert "Pi's own figure for the context now (provider usage plus estimate): 940 tokens" in doc, doc
    bench.screenshot("dry-run-warning")
    bench.command("compactd: Compact Now…")
    bench.wait_quick_input("Compact now")
    bench.type_in_quick_input("")
    done = bench.wait_for_notification(r"Session compacted \(", timeout=60)
    result = re.search(r"Session compacted \(about ([\d.]+k?) → [\d.]+k? tokens \(estimates\)\)", done)
    assert result, done
    # Like with like: the result's "before" is the dry run's estimate of the context now.
    assert re.fullmatch(k(int(now.group(1).replace(",", ""))), result.group(1)), (now.group(1), done)
    bench.wait_for_notification(r"the compaction did not make the context smaller", timeout=10)
    row = bench.wait_for_row(r"^● leaf · Compaction · about [\d.]+k? → [\d.]+k? tokens \(estimates\) · ⚠ did not shrink",
                             selected=True)
    assert row.level == 1
    bench.screenshot("compaction-did-not-shrink")
    bench.clear_notifications()


def test_h_extension_host_log_has_no_error_record(editor: Editor) -> None:
    bad = error_records(editor)
    assert not bad, "\n\n".join(bad)
