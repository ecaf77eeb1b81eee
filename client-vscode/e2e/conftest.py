"""The real editor for the end-to-end suite: code-server (VS Code 1.100 from npm) with the packaged
extension installed, driven by Debian's Chromium through Playwright. Everything it writes lives in
one temporary folder (user data, extensions, HOME, Pi's agent dir); it listens on 127.0.0.1 only,
without authentication. `run.sh` beside this file installs the pieces and builds the .vsix."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.fake_openai import FakeOpenAI

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
CODE_SERVER = HERE / "code-server" / "node_modules" / "code-server" / "out" / "node" / "entry.js"
CHROMIUM = os.environ.get("COMPACTD_E2E_CHROMIUM", "/usr/bin/chromium")
# Flags that work headless on a small CI machine without a GPU or network.
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
KEY_ENV = "COMPACTD_E2E_API_KEY"


def output_dir() -> Path:
    out = Path(os.environ.get("COMPACTD_E2E_OUTPUT", HERE / "out" / "screenshots"))
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    return out


def vsix_path() -> Path:
    path = Path(os.environ.get("COMPACTD_E2E_VSIX", HERE / "out" / "compactd.vsix"))
    if not path.is_file():
        raise RuntimeError(f"{path} is missing: build it with client-vscode/e2e/run.sh (or set COMPACTD_E2E_VSIX)")
    return path


def pi_fixture() -> Path:
    """The real Pi session from the repository's own test fixtures."""
    return REPO / "tests" / "fixtures" / "pi-before-compaction.v1.jsonl"


class Editor:
    """One code-server with its temporary profile."""

    def __init__(self, root: Path, python: str) -> None:
        self.root = root
        self.python = python
        self.user_data = root / "user-data"
        self.extensions = root / "extensions"
        self.workspace = root / "workspace"
        self.home = root / "home"
        self.agent = root / "agent"
        for d in (self.user_data / "User", self.extensions, self.workspace, self.home, self.agent):
            d.mkdir(parents=True, exist_ok=True)
        self.proc: subprocess.Popen[bytes] | None = None
        self.url = ""

    @property
    def settings_file(self) -> Path:
        return self.user_data / "User" / "settings.json"

    def settings(self, extra: dict[str, Any]) -> dict[str, Any]:
        """User settings: a quiet fresh profile plus `extra`."""
        return {
            "workbench.startupEditor": "none",
            "workbench.tips.enabled": False,
            "workbench.welcomePage.walkthroughs.openOnInstall": False,
            "security.workspace.trust.enabled": False,
            "telemetry.telemetryLevel": "off",
            "extensions.autoCheckUpdates": False,
            "extensions.autoUpdate": False,
            "update.mode": "none",
            "git.enabled": False,
            "chat.disableAIFeatures": True,
            **extra,
        }

    def write_settings(self, extra: dict[str, Any]) -> None:
        """The profile before VS Code starts (later changes go through the editor: see Workbench)."""
        self.settings_file.write_text(json.dumps(self.settings(extra), indent=2))

    def log_count(self, needle: str) -> int:
        return sum(log.read_text(errors="replace").count(needle) for log in self.extension_logs())

    def wait_applied(self, seen: int, timeout: float = 30) -> None:
        """Wait until the running daemon has applied new settings (it logs each time)."""
        deadline = time.monotonic() + timeout
        while self.log_count("options applied") <= seen:
            if time.monotonic() > deadline:
                raise AssertionError(f"the daemon did not apply the new settings within {timeout} s")
            time.sleep(0.1)

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("OPENAI_", "COMPACTD_", "VSCODE_")) and k not in ("PI_CODING_AGENT_DIR",)}
        env.update({
            "HOME": str(self.home),
            "XDG_CONFIG_HOME": str(self.home / ".config"),
            "XDG_DATA_HOME": str(self.home / ".local" / "share"),
            "XDG_CACHE_HOME": str(self.home / ".cache"),
            "PI_CODING_AGENT_DIR": str(self.agent),
            KEY_ENV: "sk-e2e-not-a-real-key",
        })
        return env

    def code_server(self, *args: str) -> list[str]:
        return ["node", str(CODE_SERVER), "--config", str(self.root / "config.yaml"),
                "--user-data-dir", str(self.user_data), "--extensions-dir", str(self.extensions), *args]

    def install(self, vsix: Path) -> None:
        (self.root / "config.yaml").write_text("bind-addr: 127.0.0.1:0\nauth: none\ncert: false\n")
        out = subprocess.run(self.code_server("--install-extension", str(vsix)), env=self.env(),
                             capture_output=True, text=True, timeout=300)
        if out.returncode != 0 or "successfully installed" not in out.stdout:
            raise RuntimeError(f"installing {vsix} failed:\n{out.stdout}\n{out.stderr}")

    def start(self) -> None:
        log = open(self.root / "code-server.log", "wb")
        self.proc = subprocess.Popen(
            self.code_server("--bind-addr", "127.0.0.1:0", "--auth", "none", "--disable-telemetry",
                             "--disable-update-check", "--disable-workspace-trust",
                             "--disable-getting-started-override", str(self.workspace)),
            env=self.env(), stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            text = (self.root / "code-server.log").read_text(errors="replace")
            found = re.search(r"HTTP server listening on (http://127\.0\.0\.1:\d+)/", text)
            if found:
                self.url = found.group(1)
                return
            if self.proc.poll() is not None:
                raise RuntimeError(f"code-server exited ({self.proc.returncode}):\n{text}")
            time.sleep(0.2)
        raise RuntimeError("code-server did not start listening within 120 s")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()

    def extension_host_logs(self) -> list[Path]:
        return sorted(self.user_data.glob("logs/*/exthost*/remoteexthost.log"))

    def daemon_pids(self) -> list[int]:
        """The daemons this editor's extension host started: found through their command line,
        which names the host's pid (`--clientProcessId=<pid>`)."""
        hosts = set()
        for log in self.extension_host_logs():
            hosts.update(re.findall(r"Extension host with pid (\d+) started", log.read_text(errors="replace")))
        pids = []
        for proc in Path("/proc").iterdir():
            if not proc.name.isdigit():
                continue
            try:
                args = (proc / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if b"compactd" in args and any(a.decode(errors="replace") in {f"--clientProcessId={h}" for h in hosts}
                                           for a in args):
                pids.append(int(proc.name))
        return pids

    def extension_logs(self) -> list[Path]:
        return sorted(self.user_data.glob("logs/*/exthost*/compactd.compactd-vscode/compactd.log"))


@pytest.fixture(scope="session")
def shots() -> Path:
    return output_dir()


@pytest.fixture(scope="session")
def fake() -> Iterator[FakeOpenAI]:
    server = FakeOpenAI().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def editor(tmp_path_factory: pytest.TempPathFactory, shots: Path) -> Iterator[Editor]:
    if not CODE_SERVER.is_file():
        raise RuntimeError(f"{CODE_SERVER} is missing: install it with client-vscode/e2e/install-code-server.sh")
    ed = Editor(tmp_path_factory.mktemp("vscode"), sys.executable)
    ed.install(vsix_path())
    try:
        yield ed
    finally:
        ed.stop()
        # The logs beside the screenshots, for people.
        for log in ed.extension_host_logs() + ed.extension_logs() + [ed.root / "code-server.log"]:
            shutil.copy(log, shots / f"{log.parent.name}-{log.name}")


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            yield b
        finally:
            b.close()


# The page as it was when a test failed, for people (the Workbench registers itself here).
PAGES: list[Any] = []


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    if report.when == "call" and report.failed and PAGES:
        try:
            PAGES[-1].screenshot(f"FAILED-{item.name}")
        except Exception:  # the page may be gone; the failure itself is what matters
            pass


def error_records(editor: Editor) -> list[str]:
    """Every error record of the extension host logs (issue 27: any error, not only compactd's;
    "No tree item with id" is logged without naming compactd). A record runs from its timestamp to
    the next one (stack traces included)."""
    bad = []
    for log in editor.extension_host_logs():
        records = re.split(r"\n(?=\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)", log.read_text(errors="replace"))
        bad.extend(record[:2000] for record in records if "[error]" in record)
    return bad

