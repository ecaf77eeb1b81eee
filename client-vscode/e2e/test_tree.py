"""The session tree at scale, in the real VS Code at its DEFAULT side-bar width (issue 27): a
deeply branched 20k-entry session, a Pi 1.6 session with context edits, an oh-my-pi session; the
picker, labels, entry documents and compaction figures. Every step asserts on what the page shows;
screenshots go to the output folder. Runs after test_extension.py on the same code-server (or starts
it when run alone: `run.sh -k test_tree`)."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .conftest import PAGES, Editor, error_records
from .sessions import DEEP_NAME, LEAF_TEXT, deep_branched, oh_my_pi, pi16
from .workbench import TREE_PANE, Workbench

SETTINGS = {"compactd.summarizer": {"backend": "extractive"},
            # Keep almost nothing, so the small Pi 1.6 session has something to compact.
            "compactd.settings": {"compaction": {"keepRecentTokens": 5}}}


def session_dir(editor: Editor) -> Path:
    encoded = "--" + str(editor.workspace).lstrip("/").replace("/", "-") + "--"
    return editor.agent / "sessions" / encoded


@pytest.fixture(scope="module")
def files(editor: Editor) -> dict[str, Path]:
    folder = session_dir(editor)
    return {
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
    """Right-click a tree row and choose a menu item (after the menu settles: VS Code ignores a
    click that comes right after the menu opened)."""
    bench.page.locator(f"{TREE_PANE} .monaco-list-row").filter(has_text=re.compile(row_pattern)).first.click(button="right")
    entry = bench.page.locator(".context-view .action-item").filter(has_text=item).first
    entry.wait_for(state="visible")
    bench.page.wait_for_timeout(400)
    entry.hover()
    entry.click()
    entry.wait_for(state="detached", timeout=5000)


def scroll_to_row(bench: Workbench, pattern: str, key: str, tries: int = 40) -> None:
    """Move the focus through the (virtual) list with `key` until a row matching `pattern` is drawn."""
    for _ in range(tries):
        if any(re.search(pattern, r.text) for r in bench.tree_rows()):
            return
        bench.page.keyboard.press(key)
        bench.page.wait_for_timeout(150)
    raise AssertionError(f"no row matching {pattern!r} after {tries} x {key}")


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
    assert any(t.startswith("Refactor the notes loader") and "12 entries" in t for t in texts), texts  # oh-my-pi title
    assert any(t.startswith("paste the whole 4 MB log here please") for t in texts), texts  # first request
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


def test_c_earlier_entries_and_other_branches(bench: Workbench) -> None:
    bench.click_row(r"^● leaf")
    bench.page.keyboard.press("Home")
    first = bench.wait_for_row(r"^Earlier entries…")
    assert first.level == 1
    assert sticky_rows(bench) == 0  # the click below lands on the row, not on a pinned header
    before = {r.text for r in bench.tree_rows()}
    bench.click_row(r"^Earlier entries…")
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


def test_f_oh_my_pi_figures_as_recorded(bench: Workbench) -> None:
    open_from_picker(bench, "Refactor the notes loader")
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
    doc = bench.wait_for_webview_text("Compaction summary")
    assert "Tokens after (recorded): 14,722" in doc and "Method: handoff" in doc, doc
    assert "Warning recorded: Compaction freed too little context" in doc, doc
    assert doc.count("Details") == 0 and doc.count("Files read") == 1, doc
    bench.screenshot("oh-my-pi-compaction-document")


def test_g_compaction_that_would_not_shrink_is_said_before_and_after(bench: Workbench) -> None:
    open_from_picker(bench, "paste the whole 4 MB log here please")
    bench.wait_for_row(r"^● leaf · ", timeout=30, selected=True)
    bench.command("compactd: Show What Compaction Would Do")
    doc = bench.wait_for_webview_text("What compaction would do")
    assert re.search(r"Context now, estimated: about [\d,]+ tokens; kept after compaction: about [\d,]+ tokens", doc), doc
    assert "Warning: this compaction would probably not shrink the context." in doc, doc
    assert "Pi's own figure for the context now (provider usage plus estimate): 940 tokens" in doc, doc
    bench.screenshot("dry-run-warning")
    bench.command("compactd: Compact Now…")
    bench.wait_quick_input("Compact now")
    bench.type_in_quick_input("")
    done = bench.wait_for_notification(r"Session compacted \(", timeout=60)
    assert re.search(r"Session compacted \(about [\d.]+k? → [\d.]+k? tokens \(estimates\)\)", done), done
    bench.wait_for_notification(r"the compaction did not make the context smaller", timeout=10)
    row = bench.wait_for_row(r"^● leaf · Compaction · about [\d.]+k? → [\d.]+k? tokens \(estimates\) · ⚠ did not shrink",
                             selected=True)
    assert row.level == 1
    bench.screenshot("compaction-did-not-shrink")
    bench.clear_notifications()


def test_h_extension_host_log_has_no_error_record(editor: Editor) -> None:
    bad = error_records(editor)
    assert not bad, "\n\n".join(bad)
