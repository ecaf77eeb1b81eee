"""What the end-to-end tests do with VS Code's page, in its own words: run a command, read the
session tree's rows, the notifications and the status bar. Selectors are VS Code's (1.100)
workbench DOM; keep them here so a VS Code update touches one file."""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass
from pathlib import Path

from playwright.sync_api import Locator, Page

TREE_PANE = ".pane:has(.pane-header[aria-label*='Session Tree'])"


@dataclass(frozen=True)
class TreeRow:
    text: str  # what the row shows: label, a space, description
    level: int  # aria-level, 1 = top
    selected: bool
    expanded: bool | None  # None: not expandable


class Workbench:
    def __init__(self, page: Page, shots: Path) -> None:
        self.page = page
        self.shots = shots
        self._shot = 0

    # --- looking ---------------------------------------------------------------------------------

    def screenshot(self, name: str) -> Path:
        """For people to look at (never asserted): <output>/NN-name.png."""
        self._shot += 1
        path = self.shots / f"{self._shot:02d}-{name}.png"
        self.page.screenshot(path=str(path))
        return path

    def status_bar(self) -> str:
        return self.page.locator("#workbench\\.parts\\.statusbar").inner_text()

    def wait_for_status(self, pattern: re.Pattern[str], timeout: float = 30) -> str:
        deadline = time.monotonic() + timeout
        while not pattern.search(text := self.status_bar()):
            if time.monotonic() > deadline:
                raise AssertionError(f"the status bar never matched {pattern.pattern!r}: {text!r}")
            time.sleep(0.1)
        return text

    def tree(self) -> Locator:
        return self.page.locator(f"{TREE_PANE} .monaco-list")

    def tree_rows(self) -> list[TreeRow]:
        """The rows VS Code currently renders (the list is virtual: only the visible ones), read
        in one go so a re-render cannot pull a row away mid-read."""
        raw = self.page.evaluate(
            """(pane) => [...document.querySelectorAll(pane + ' .monaco-list-row')].map((row) => ({
                text: [row.querySelector('.label-name'), row.querySelector('.label-description')]
                    .map((e) => (e ? e.innerText : '')).join(' '),
                level: row.getAttribute('aria-level'),
                selected: row.getAttribute('aria-selected'), expanded: row.getAttribute('aria-expanded')}))""",
            TREE_PANE)
        return [TreeRow(text=" ".join(r["text"].split()), level=int(r["level"] or 1), selected=r["selected"] == "true",
                        expanded=None if r["expanded"] is None else r["expanded"] == "true") for r in raw]

    def selected_row(self) -> TreeRow | None:
        return next((r for r in self.tree_rows() if r.selected), None)

    def wait_for_row(self, pattern: str, timeout: float = 15, selected: bool | None = None) -> TreeRow:
        """Poll the rendered rows until one matches `pattern` (a regex) and, if given, the selection."""
        deadline = time.monotonic() + timeout
        rx = re.compile(pattern)
        while True:
            for row in self.tree_rows():
                if rx.search(row.text) and (selected is None or row.selected == selected):
                    return row
            if time.monotonic() > deadline:
                raise AssertionError(f"no tree row matching {pattern!r} (selected={selected}); rows: {self.tree_rows()}")
            time.sleep(0.1)

    def tree_message(self) -> str:
        loc = self.page.locator(f"{TREE_PANE} .message")
        return loc.inner_text() if loc.count() else ""

    def wait_for_tree_message(self, text: str, timeout: float = 15) -> str:
        """The view renders its message on its own schedule, after the status bar may already
        have changed; poll until it says `text`."""
        deadline = time.monotonic() + timeout
        while text not in (message := self.tree_message()):
            if time.monotonic() > deadline:
                raise AssertionError(f"the tree's message never said {text!r}: {message!r}")
            time.sleep(0.1)
        return message

    def notifications(self) -> list[str]:
        """Texts of the notification toasts on screen, newest last."""
        texts = self.page.evaluate(
            "() => [...document.querySelectorAll('.notifications-toasts .notification-toast')].map((t) => t.innerText)")
        return [" ".join(t.split()) for t in texts]

    def wait_for_notification(self, pattern: str, timeout: float = 15) -> str:
        deadline = time.monotonic() + timeout
        rx = re.compile(pattern)
        while True:
            for text in self.notifications():
                if rx.search(text):
                    return text
            if time.monotonic() > deadline:
                raise AssertionError(f"no notification matching {pattern!r}; on screen: {self.notifications()}")
            time.sleep(0.05)

    def toast(self, pattern: str) -> Locator:
        return self.page.locator(".notifications-toasts .notification-toast").filter(has_text=re.compile(pattern))

    def clear_notifications(self) -> None:
        self.command("Notifications: Clear All Notifications")
        self.page.wait_for_function("document.querySelectorAll('.notifications-toasts .notification-toast').length === 0")

    # --- doing -----------------------------------------------------------------------------------

    def command(self, title: str) -> None:
        """Run a command by its title through the command palette (F1)."""
        self.page.keyboard.press("F1")
        box = self.page.locator(".quick-input-widget input")
        box.wait_for(state="visible")
        box.fill(f">{title}")
        # The exact title as the first result, then run it.
        self.page.locator(".quick-input-widget .monaco-list-row").filter(
            has_text=re.compile(rf"^{re.escape(title)}")).first.wait_for(state="visible")
        box.press("Enter")

    def quick_input(self) -> Locator:
        return self.page.locator(".quick-input-widget")

    def wait_quick_input(self, title_or_text: str, timeout: float = 15) -> None:
        self.quick_input().filter(has_text=title_or_text).wait_for(state="visible", timeout=timeout * 1000)

    def type_in_quick_input(self, text: str, enter: bool = True, timeout: float = 10) -> None:
        """Fill the quick input and press Enter once it holds exactly `text`. VS Code's file dialog
        writes its starting folder into the box asynchronously; on a loaded machine that can land
        after our fill and replace it, so the fill is repeated until the value sticks."""
        box = self.page.locator(".quick-input-widget input").first
        deadline = time.monotonic() + timeout
        while True:
            box.fill(text)
            self.page.wait_for_timeout(200)
            if box.input_value() == text:
                break
            if time.monotonic() > deadline:
                raise AssertionError(f"the quick input kept {box.input_value()!r} instead of {text!r}")
        if enter:
            box.press("Enter")

    def pick(self, label_pattern: str) -> None:
        """Choose the quick pick row whose text matches."""
        row = self.page.locator(".quick-input-widget .monaco-list-row").filter(has_text=re.compile(label_pattern)).first
        row.wait_for(state="visible")
        row.click()

    def click_row(self, pattern: str) -> None:
        self.page.locator(f"{TREE_PANE} .monaco-list-row").filter(has_text=re.compile(pattern)).first.click()

    def context_menu(self, row_pattern: str, item: str) -> None:
        """Right-click a tree row and choose a menu item (after the menu settles: VS Code ignores a
        click that comes right after the menu opened)."""
        self.page.locator(f"{TREE_PANE} .monaco-list-row").filter(has_text=re.compile(row_pattern)).first.click(button="right")
        entry = self.page.locator(".context-view .action-item").filter(has_text=item).first
        entry.wait_for(state="visible")
        self.page.wait_for_timeout(400)
        entry.hover()
        entry.click()
        entry.wait_for(state="detached", timeout=5000)

    def hover_text(self, row_pattern: str, needle: str, timeout: float = 10) -> str:
        """Hover a tree row and return the text of its tooltip once it shows `needle`."""
        self.page.locator(f"{TREE_PANE} .monaco-list-row").filter(has_text=re.compile(row_pattern)).first.hover()
        hover = self.page.locator(".workbench-hover, .monaco-hover").filter(has_text=needle).first
        hover.wait_for(state="visible", timeout=timeout * 1000)
        return " ".join(hover.inner_text().split())

    def edit_user_settings(self, settings: dict[str, object], file: Path, timeout: float = 30) -> None:
        """Replace the User settings the way a person does: settings.json in the editor, saved."""
        self.command("Preferences: Open User Settings (JSON)")
        tab = self.page.locator(".tabs-container .tab").filter(has_text="settings.json")
        tab.wait_for(state="visible")
        self.page.locator(".editor-instance .monaco-editor .view-lines").filter(has_text="{").first.click()
        self.page.keyboard.press("Control+A")
        # Pasted, as typing JSON into the editor meets auto-closing and suggestions.
        self.page.evaluate("(text) => navigator.clipboard.writeText(text)", json.dumps(settings, indent=2))
        self.page.keyboard.press("Control+V")
        self.page.keyboard.press("Control+S")
        deadline = time.monotonic() + timeout
        while True:
            try:
                if json.loads(file.read_text()) == settings:
                    break
            except ValueError:
                pass
            if time.monotonic() > deadline:
                raise AssertionError(f"settings.json was not saved with the new settings: {file.read_text()!r}")
            time.sleep(0.1)
        tab.hover()
        tab.locator(".tab-actions .action-label").first.click()
        tab.wait_for(state="detached")

    def open_file(self, name: str) -> None:
        """Quick Open (Ctrl+P) a workspace file into an editor."""
        self.page.keyboard.press("Control+P")
        box = self.page.locator(".quick-input-widget input")
        box.wait_for(state="visible")
        box.fill(name)
        self.page.locator(".quick-input-widget .monaco-list-row").filter(has_text=name).first.wait_for(state="visible")
        box.press("Enter")
        self.page.locator(f".tabs-container .tab[aria-label*='{name}']").wait_for(state="visible")

    def wait_for_webview_text(self, needle: str, timeout: float = 20) -> str:
        """The text of the webview (e.g. a Markdown preview) that contains `needle`; webviews are
        nested iframes, so look through every frame of the page."""
        deadline = time.monotonic() + timeout
        while True:
            for frame in self.page.frames:
                try:
                    text = frame.evaluate("document.body ? document.body.innerText : ''")
                except Exception:  # a frame that navigated or closed meanwhile
                    continue
                if needle in text:
                    return text
            if time.monotonic() > deadline:
                raise AssertionError(f"no webview shows {needle!r}")
            time.sleep(0.2)
