"""Helpers shared by the commands that run the engine (`compact`, `navigate`, `demo`)."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Awaitable
from pathlib import Path
from typing import Any, TypeVar

from compactd.engine.progress import ProgressUpdate
from compactd.engine.settings import Settings, SettingsError, build_summarizer, load_settings
from compactd.session import Session
from compactd.summarize.base import Summarizer

from ._common import CliError

T = TypeVar("T")


def settings_for(session: Session, overrides: dict[str, Any] | None = None) -> Settings:
    """Settings of the session's project folder when it exists here, else of the current folder;
    `overrides` (from command-line flags) win over every file."""
    cwd = session.cwd if session.cwd and Path(session.cwd).is_dir() else os.getcwd()
    try:
        settings = load_settings(cwd, overrides or None)
    except SettingsError as exc:
        raise CliError(str(exc)) from exc
    for error in settings.errors:
        print(f"compactd: warning: {error}", file=sys.stderr)
    return settings


def summarizer_for(settings: Settings) -> Summarizer:
    try:
        return build_summarizer(settings)
    except SettingsError as exc:
        raise CliError(str(exc)) from exc


class ProgressPrinter:
    """One self-overwriting status line on stderr when it is a terminal; silent otherwise."""

    def __init__(self) -> None:
        self.enabled = sys.stderr.isatty()
        self._last: tuple[str, int | None] | None = None

    def __call__(self, update: ProgressUpdate) -> None:
        if not self.enabled:
            return
        key = (update.message, update.percentage)
        if key == self._last:
            return
        self._last = key
        percent = f" {update.percentage:3d}%" if update.percentage is not None else ""
        sys.stderr.write(f"\r\x1b[2K{update.message}{percent}")
        sys.stderr.flush()

    def finish(self) -> None:
        if self.enabled and self._last is not None:
            sys.stderr.write("\r\x1b[2K")
            sys.stderr.flush()


def run_async(coro: Awaitable[T], progress: ProgressPrinter | None = None) -> T:
    """Run the engine call; Ctrl-C cancels it (nothing is written) and exits with status 130."""
    try:
        return asyncio.run(coro)  # type: ignore[arg-type]
    except KeyboardInterrupt:
        if progress is not None:
            progress.finish()
        print("compactd: cancelled, nothing was written", file=sys.stderr)
        raise SystemExit(130) from None
    finally:
        if progress is not None:
            progress.finish()


def usage_line(usage: dict[str, Any] | None, model_calls: int) -> str:
    """Token usage as printed by the commands; says "no model was called" only when none was."""
    if not usage:
        if model_calls == 0:
            return "none (no model was called)"
        calls = f"{model_calls} model call{'s' if model_calls != 1 else ''}"
        return f"not reported by the summarizer ({calls})"
    cost = usage.get("cost") or {}
    total = cost.get("total") if isinstance(cost, dict) else None
    text = (
        f"input {usage.get('input', 0)}, output {usage.get('output', 0)}, cache read {usage.get('cacheRead', 0)}"
    )
    text += f", cost ${total:.4f}" if isinstance(total, (int, float)) and total else ""
    if usage.get("estimated"):
        text = "about " + text + " (estimated with tiktoken: the server reported no usage)"
    return text
