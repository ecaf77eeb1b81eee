"""The packaged extension in a real VS Code (code-server + Chromium), as a person uses it.

One editor session runs the scenarios in order, each building on the previous one's session file:
open the real Pi fixture with the interpreter set in User settings (issue 11 §4 a); cancel a
compaction against a slow local model three ways while the file is still the untouched v1 fixture
(c); compact with the embedded summarizer (b); navigate with a summary to an earlier user message
(d); token statistics as a rendered document; a daemon that dies comes back quietly; a changed
interpreter wins over a restart under way; a broken interpreter gives one actionable notification
(§2); the extension host log holds no uncaught error (e). Every step asserts on what the page
shows and on the session file's bytes; screenshots go to the output folder for people.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.fake_openai import FakeOpenAI, Reply

from .conftest import KEY_ENV, PAGES, Editor, error_records, pi_fixture
from .workbench import Workbench

STATUS = re.compile(r"\d+(\.\d+)?k? / \d+(\.\d+)?k? \(\d+%\)")
SLOW_WORDS = [f"streamed-word-{i:03d} " for i in range(400)]


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.fixture(scope="module")
def session_file(editor: Editor) -> Path:
    path = editor.workspace / "session.jsonl"
    path.write_bytes(pi_fixture().read_bytes())
    (editor.workspace / "notes.md").write_text("# Notes\n\nAn editor to put the focus in.\n")
    return path


@pytest.fixture(scope="module")
def vscode(editor: Editor, browser: Any, shots: Path, session_file: Path) -> Iterator[Workbench]:
    # (a) the interpreter is set in *User* settings of a fresh profile.
    editor.write_settings({"compactd.interpreter": editor.python, "compactd.summarizer": {"backend": "extractive"}})
    editor.start()
    context = browser.new_context(viewport={"width": 1400, "height": 900},
                                  permissions=["clipboard-read", "clipboard-write"])
    page = context.new_page()
    page.goto(f"{editor.url}/?folder={editor.workspace}")
    page.locator("#workbench\\.parts\\.statusbar").wait_for(state="visible", timeout=90_000)
    page.locator(".activitybar a[aria-label='compactd']").wait_for(state="visible", timeout=60_000)
    # A wider side bar, so screenshots show whole labels (drag its edge, as a person would).
    bar = page.locator("#workbench\\.parts\\.sidebar").bounding_box()
    if bar is not None:
        edge_x, mid_y = bar["x"] + bar["width"] + 1, bar["y"] + bar["height"] / 2
        page.mouse.move(edge_x, mid_y)
        page.mouse.down()
        page.mouse.move(edge_x + 260, mid_y, steps=5)
        page.mouse.up()
    bench = Workbench(page, shots)
    PAGES.append(bench)
    yield bench
    PAGES.remove(bench)
    context.close()


def test_1_open_session_shows_tree_and_status(vscode: Workbench, session_file: Path) -> None:
    vscode.screenshot("fresh-profile")
    vscode.command("compactd: Open Session File…")
    # No Pi session folder for this workspace yet: the file dialog opens; type the path.
    vscode.wait_quick_input("Open a Pi session file")
    started = time.monotonic()
    vscode.type_in_quick_input(str(session_file))
    # The rows appear, the leaf is revealed and selected, the status bar shows the context size.
    leaf = vscode.wait_for_row(r"● leaf", timeout=20, selected=True)
    took = time.monotonic() - started
    assert "thinking: off" in leaf.text
    vscode.wait_for_status(STATUS)
    assert STATUS.search(vscode.status_bar()), vscode.status_bar()
    assert took < 20
    rows = vscode.tree_rows()
    assert len(rows) > 10 and all(r.level == 1 for r in rows)  # Pi's linear session: one flat list
    # Opening reads: the v1 file is migrated in memory only, its bytes are untouched.
    assert session_file.read_bytes() == pi_fixture().read_bytes()
    vscode.screenshot("session-open")


@pytest.mark.parametrize("how", ["escape-in-tree", "escape-in-editor", "cancel-button"])
def test_2_cancel_slow_compaction(vscode: Workbench, editor: Editor, fake: FakeOpenAI, session_file: Path,
                                  how: str) -> None:
    if how == "escape-in-tree":
        # Point the summarizer at the slow local model (User settings, applied without a restart).
        seen = editor.log_count("options applied")
        vscode.edit_user_settings(editor.settings({"compactd.interpreter": editor.python, "compactd.summarizer": {
            "backend": "openai", "baseUrl": fake.url, "model": "fake-model", "apiKeyEnv": KEY_ENV}}), editor.settings_file)
        editor.wait_applied(seen)
    if how == "escape-in-editor":
        vscode.open_file("notes.md")
    fake.reset()
    fake.default = Reply.stream(SLOW_WORDS, chunk_delay=0.2)
    before = sha(session_file)
    vscode.command("compactd: Compact Now…")
    vscode.wait_quick_input("Compact now")
    vscode.type_in_quick_input("")
    # The progress notification shows the text as the model streams it.
    progress = vscode.wait_for_notification(r"Compacting session.*streamed-word-(00[5-9]|0[1-9]\d)", timeout=30)
    assert "streamed-word-" in progress
    vscode.screenshot(f"progress-{how}")
    if how == "escape-in-tree":
        vscode.command("compactd: Focus on Session Tree View")
        vscode.page.locator(".pane-body.compactd-sessionTree, .monaco-list:focus-within").first.wait_for(timeout=5000)
        vscode.wait_for_notification(r"Compacting session", timeout=5)
        vscode.page.keyboard.press("Escape")
    elif how == "escape-in-editor":
        vscode.page.locator(".editor-instance .monaco-editor .view-lines").first.click()
        vscode.page.keyboard.press("Escape")
    else:
        vscode.toast("Compacting session").get_by_role("button", name="Cancel").click()
    pressed = time.monotonic()
    vscode.wait_for_notification(r"Compaction cancelled; the session is unchanged\.", timeout=5)
    ended_after = time.monotonic() - pressed
    assert not vscode.toast(r"Compacting session").count()
    print(f"LATENCY {how} {ended_after:.3f}")
    assert ended_after < 1.0, f"cancellation took {ended_after:.2f} s"
    assert sha(session_file) == before
    assert fake.wait_disconnected(5), "the model server did not see its connection closed"
    assert fake.completed == 0
    vscode.screenshot(f"cancelled-{how}")
    vscode.clear_notifications()


def test_3_compact_with_embedded_summarizer(vscode: Workbench, editor: Editor, session_file: Path) -> None:
    seen = editor.log_count("options applied")
    vscode.edit_user_settings(editor.settings({"compactd.interpreter": editor.python,
                                               "compactd.summarizer": {"backend": "extractive"}}), editor.settings_file)
    editor.wait_applied(seen)
    before = session_file.read_bytes()
    vscode.command("compactd: Compact Now…")
    vscode.wait_quick_input("Compact now")
    vscode.type_in_quick_input("")
    done = vscode.wait_for_notification(r"Session compacted \(", timeout=60)
    # Like with like: the estimate of the context before against the estimate after (issue 27).
    assert re.search(r"Session compacted \(about [\d.]+k? → [\d.]+k? tokens \(estimates\)\)", done), done
    # The compaction node is labelled by what it is, marks first, revealed and selected as the new leaf.
    row = vscode.wait_for_row(r"^● leaf · Compaction · about [\d.]+k? → [\d.]+k? tokens \(estimates\)", selected=True)
    assert row.level == 1
    vscode.screenshot("compacted")
    # The first write migrates the v1 file to v3 (after a backup of the original bytes) and
    # appends exactly one entry.
    assert Path(f"{session_file}.v1.bak").read_bytes() == before
    now = lines(session_file)
    assert now[0]["type"] == "session" and now[0]["version"] == 3
    assert len(now) == len(before.decode().strip().splitlines()) + 1
    entry = now[-1]
    assert entry["type"] == "compaction" and entry["summary"].startswith("## Goal")
    # Its summary opens as a rendered Markdown preview.
    vscode.toast("Session compacted").get_by_role("button", name="Show Summary").click()
    tab = vscode.page.locator(".tabs-container .tab").filter(has_text=re.compile(r"^\[Preview\] entry-"))
    tab.wait_for(state="visible", timeout=15_000)
    vscode.wait_for_webview_text("Compaction summary")
    vscode.screenshot("summary-preview")
    vscode.clear_notifications()


def test_4_navigate_with_summary_to_earlier_user_message(vscode: Workbench, session_file: Path) -> None:
    # The embedded summarizer again (test 3 set it).
    before = session_file.read_bytes()
    target = next(e for e in lines(session_file) if e.get("type") == "message"
                  and e["message"].get("role") == "user"
                  and "what did i just execute" in json.dumps(e["message"].get("content")))
    vscode.command("compactd: Navigate Here…")
    vscode.wait_quick_input("Navigate to which entry?")
    vscode.type_in_quick_input("what did i just execute", enter=False)
    vscode.pick(r"what did i just execute")
    vscode.wait_quick_input("Navigate to what did i just execute")
    vscode.pick(r"summarize the branch you leave")
    vscode.wait_for_notification(r"Moved; the branch you left was summarized\.", timeout=60)
    # The target's parent is now a branch point on the path: the new leaf (the summary) stays a
    # top-level row; the branch left behind is a collapsed group under the point, flat inside.
    leaf = vscode.wait_for_row(r"^● leaf · Branch summary · summarizes \d+ entries", selected=True)
    point = vscode.wait_for_row(r"^⎇ 1 other branch · ")
    assert leaf.level == point.level == 1 and point.expanded is False
    vscode.click_row(r"^⎇ 1 other branch · ")
    vscode.page.keyboard.press("ArrowRight")
    left = vscode.wait_for_row(r"^Branch 1 of 2 · \d+ entries · user: what did i just execute\?")
    assert left.level == 2
    vscode.screenshot("navigated-with-summary")
    after = session_file.read_bytes()
    assert after.startswith(before) and after[len(before):].count(b"\n") == 1
    entry = lines(session_file)[-1]
    assert entry["type"] == "branch_summary" and entry["parentId"] == target["parentId"]
    assert "## Goal" in entry["summary"]
    # The user message comes back in an editor for re-sending.
    vscode.page.locator(".editor-instance .view-lines").filter(has_text="what did i just execute").first.wait_for()
    vscode.clear_notifications()


def test_4b_fork_keeps_labels_beside_their_targets(vscode: Workbench, session_file: Path) -> None:
    """A label on the leaf (the branch summary), then a fork: in the new file the label still shows
    on its entry, not as a row, and the summary says its branch is not in this file."""
    vscode.command("compactd: Reveal Current Leaf")  # test 4 left a branch group open below it
    vscode.wait_for_row(r"^● leaf · Branch summary", selected=True)
    vscode.context_menu(r"^● leaf · Branch summary", "Set Label…")
    vscode.wait_quick_input("Label: ")
    vscode.type_in_quick_input("before-fork")
    vscode.wait_for_row(r"^● leaf · \[before-fork\] · Branch summary · summarizes \d+ entries", timeout=20)
    summary_id = next(e["id"] for e in reversed(lines(session_file)) if e["type"] == "branch_summary")
    vscode.command("compactd: Fork to New Session File")
    toast = vscode.toast(r"Forked into ")
    toast.wait_for(state="visible", timeout=20_000)
    fork = Path(re.search(r"Forked into (\S+\.jsonl)", " ".join(toast.inner_text().split())).group(1))
    toast.locator(".monaco-button").filter(has_text="Open in Panel").first.click()
    leaf = vscode.wait_for_row(r"^● leaf · \[before-fork\] · Branch summary · of a branch not in this file",
                               timeout=30, selected=True)
    assert leaf.level == 1
    assert not [r.text for r in vscode.tree_rows() if re.match(r"^(● leaf · )?label", r.text)], vscode.tree_rows()
    entries = lines(fork)
    labels = [e for e in entries if e.get("type") == "label"]
    assert [(e["targetId"], e["label"]) for e in labels] == [(summary_id, "before-fork")], labels
    vscode.screenshot("fork-labels-beside-targets")
    vscode.clear_notifications()


def test_5_token_statistics_open_as_rendered_markdown(vscode: Workbench) -> None:
    vscode.command("compactd: Show Token Statistics")
    vscode.page.locator(".tabs-container .tab").filter(has_text=re.compile(r"^\[Preview\] token-stats-")).wait_for()
    text = vscode.wait_for_webview_text("tiktoken's")
    assert re.search(r"tokens counted with tiktoken's \S+ encoding\. That is (not )?the model's own tokenizer", text), text
    assert "Exact false" not in text.replace("|", " ")
    vscode.screenshot("token-statistics")


def test_6_daemon_that_dies_is_restarted_quietly(vscode: Workbench, editor: Editor) -> None:
    pids = editor.daemon_pids()
    assert len(pids) == 1, pids
    os.kill(pids[0], signal.SIGKILL)
    # A new daemon, the session opened again on it, and nobody was bothered with a notification.
    deadline = time.monotonic() + 30
    while not (editor.daemon_pids() and editor.daemon_pids() != pids):
        assert time.monotonic() < deadline, "the daemon was not restarted"
        time.sleep(0.2)
    vscode.wait_for_row(r"● leaf", timeout=30, selected=True)
    vscode.wait_for_status(STATUS)
    assert not [n for n in vscode.notifications() if "compactd" in n.lower()], vscode.notifications()
    vscode.screenshot("restarted-after-crash")


def empty_venv_python(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A Python without compactd installed, as a person might pick by mistake."""
    venv = tmp_path_factory.mktemp("empty-venv")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    return str(venv / "bin" / "python")


def test_7_interpreter_changed_while_the_daemon_restarts_takes_effect(vscode: Workbench, editor: Editor,
                                                                      tmp_path_factory: pytest.TempPathFactory) -> None:
    # An interpreter that takes 8 s to start, so the restart after a crash is still under way
    # when the setting changes (editing settings.json takes a second or two).
    slow = tmp_path_factory.mktemp("slow-python") / "python"
    slow.write_text(f"#!/bin/sh\nsleep 8\nexec '{editor.python}' \"$@\"\n")
    slow.chmod(0o755)
    seen = editor.log_count("options applied")
    vscode.edit_user_settings(editor.settings({"compactd.interpreter": str(slow)}), editor.settings_file)
    editor.wait_applied(seen, timeout=60)  # restarted through the slow interpreter, initializing
    # The restart emptied the panel; the session shown again means the client is up, not starting.
    vscode.wait_for_row(r"● leaf", timeout=30)
    vscode.wait_for_status(STATUS)
    pids = editor.daemon_pids()
    assert len(pids) == 1, pids
    os.kill(pids[0], signal.SIGKILL)  # the client restarts it, through the 8 s interpreter
    broken = empty_venv_python(tmp_path_factory)
    vscode.edit_user_settings(editor.settings({"compactd.interpreter": broken}), editor.settings_file)
    # The new setting wins over the restart that was under way: the broken interpreter is tried.
    message = vscode.wait_for_notification(r"compactd could not start", timeout=40)
    assert f"`{broken} -m compactd` failed: No module named compactd." in message
    vscode.screenshot("changed-while-restarting")
    vscode.edit_user_settings(editor.settings({"compactd.interpreter": editor.python}), editor.settings_file)
    vscode.wait_for_row(r"● leaf", timeout=30)
    vscode.wait_for_status(STATUS)
    assert len(editor.daemon_pids()) == 1, editor.daemon_pids()  # no daemon left behind by the restarts
    vscode.clear_notifications()


def test_8_broken_interpreter_gives_one_actionable_notification(vscode: Workbench, editor: Editor,
                                                                  tmp_path_factory: pytest.TempPathFactory) -> None:
    python = empty_venv_python(tmp_path_factory)
    vscode.edit_user_settings(editor.settings({"compactd.interpreter": python}), editor.settings_file)
    message = vscode.wait_for_notification(r"compactd could not start", timeout=30)
    assert f"`{python} -m compactd` failed: No module named compactd." in message
    assert "Set compactd.interpreter to a Python that has compactd installed" in message
    # Tree and status bar say the server is not running instead of showing stale figures.
    vscode.wait_for_status(re.compile("compactd: server not running"))
    assert not STATUS.search(vscode.status_bar())
    # Status bar and tree are updated by separate messages from the extension host: poll both.
    vscode.wait_for_tree_message("server is not running")
    deadline = time.monotonic() + 15
    while any(r.text for r in vscode.tree_rows()):
        assert time.monotonic() < deadline, [r.text for r in vscode.tree_rows()]
        time.sleep(0.1)
    vscode.screenshot("broken-interpreter")
    time.sleep(3)  # no automatic restarts, so no further notifications
    assert len([n for n in vscode.notifications() if "compactd" in n]) == 1, vscode.notifications()
    # The button opens that very setting.
    vscode.toast("compactd could not start").get_by_role("button", name="Open Setting").click()
    vscode.page.locator(".settings-editor .setting-item-contents").filter(has_text="Interpreter").first.wait_for()
    vscode.screenshot("open-setting")
    # Fixing the setting starts the daemon again and reopens the session.
    vscode.edit_user_settings(editor.settings({"compactd.interpreter": editor.python}), editor.settings_file)
    vscode.wait_for_row(r"● leaf", timeout=30)
    vscode.wait_for_status(STATUS)


def test_9_extension_host_log_has_no_error_record(editor: Editor) -> None:
    assert editor.extension_host_logs(), "no extension host log was written"
    bad = error_records(editor)
    assert not bad, "\n\n".join(bad)
