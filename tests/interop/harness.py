"""The real Pi programs, installed from npm and driven offline against the fake model.

`ensure_installed()` installs `tests/interop/pi/package-lock.json` once into
`.interop-cache/pi-<hash of the lock file>/` (ignored by git) and reuses it while the lock file is
unchanged. `PiHome` is one temporary agent directory (models.json pointing at the fake server,
settings.json) plus a working directory; `drive()` runs `pi/drive.mjs` (a scripted session through
Pi's SDK) and `pi_contexts()` runs `pi/context.mjs` (Pi's own `buildSessionContext` for every leaf).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.support.fake_openai import FakeOpenAI, RecordedRequest, Reply

HERE = Path(__file__).resolve().parent
PACKAGE_DIR = HERE / "pi"
REPO = HERE.parent.parent
CACHE = REPO / ".interop-cache"

PI_073 = "@mariozechner/pi-coding-agent"
PI_16 = "@earendil-works/pi-coding-agent"
OMP = "@oh-my-pi/pi-coding-agent"
VERSIONS = {PI_073: "0.73.1", PI_16: "1.6.0", OMP: "18.2.3"}

INSTALL_TIMEOUT = 900


@dataclass(frozen=True)
class Install:
    root: Path  # holds node_modules

    @property
    def node22(self) -> str:
        return str(self.root / "node_modules" / "node" / "bin" / "node")

    @property
    def bun(self) -> str:
        return str(self.root / "node_modules" / "@oven" / "bun-linux-x64" / "bin" / "bun")

    def node_for(self, package: str) -> str:
        """Pi 1.6 needs Node >= 22.19 (the `node` npm package); 0.73.1 runs on the machine's Node 20;
        oh-my-pi runs its TypeScript sources under bun (the `@oven/bun-linux-x64` npm package)."""
        if package == OMP:
            return self.bun
        if package == PI_16:
            return self.node22
        return shutil.which("node") or self.node22


def _registry_reachable(npm: str) -> bool:
    try:
        done = subprocess.run([npm, "ping"], capture_output=True, timeout=60, text=True)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


_install: Install | None = None


def ensure_installed() -> Install:
    """Install the pinned packages (once per lock file) or skip when the registry is unreachable."""
    global _install
    if _install is not None:
        return _install
    lock = PACKAGE_DIR / "package-lock.json"
    key = hashlib.sha256(lock.read_bytes()).hexdigest()[:16]
    root = CACHE / f"pi-{key}"
    if not (root / ".installed").exists():
        npm = shutil.which("npm")
        if npm is None or shutil.which("node") is None:
            pytest.skip("interop: node/npm not installed, cannot install the real Pi programs")
        if not _registry_reachable(npm):
            pytest.skip("interop: the npm registry is unreachable, cannot install the real Pi programs")
        root.mkdir(parents=True, exist_ok=True)
        shutil.copy2(PACKAGE_DIR / "package.json", root / "package.json")
        shutil.copy2(lock, root / "package-lock.json")
        # Not `npm ci`: oh-my-pi lists optional native packages for platforms that were never published
        # (404), and npm 11's `ci` calls a lock without them out of sync. `install` follows the lock for
        # everything that exists and skips those.
        done = subprocess.run(
            [npm, "install", "--no-audit", "--no-fund", "--loglevel=error"],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=INSTALL_TIMEOUT,
        )
        if done.returncode != 0:
            if not _registry_reachable(npm):
                pytest.skip("interop: the npm registry became unreachable during `npm install`")
            raise RuntimeError(f"npm install failed in {root}:\n{done.stderr[-4000:]}")
        (root / ".installed").write_text(key + "\n")
    _install = Install(root)
    return _install


# --- the fake model --------------------------------------------------------------------------


# Summary requests: history/branch prompts wrap the conversation in tags; Pi 1.6's turn-prefix
# prompt uses a `# Conversation` heading instead. Their system prompts all speak of summarizing.
SUMMARY_MARKERS = ("<conversation>", "# Conversation\n")
_USAGE_DIRECTIVE = re.compile(r"\[\[usage (\d+)\]\]")
_TOOL_DIRECTIVE = re.compile(r"\[\[(read|write|edit|bash) ([^\] ]+)(?: ([^\]]*))?\]\]")


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return ""


def is_summary_request(request: RecordedRequest) -> bool:
    messages = (request.body or {}).get("messages", [])
    system = " ".join(_text(m.get("content")) for m in messages if m.get("role") in ("system", "developer"))
    if "summariz" in system.lower() and "coding agent harness" not in system:
        return True
    return any(marker in _text(m.get("content")) for m in messages if m.get("role") == "user" for marker in SUMMARY_MARKERS)


class FakeModel:
    """Answers Pi like a small coding model: `[[read path]]`, `[[write path text]]`,
    `[[edit path text]]` or `[[bash path]]` (cat) in the user's prompt → one tool call, then a
    short answer; `[[big]]` → a near-full context; `[[usage N]]` → an answer reporting N prompt
    tokens; `[[length]]` → an answer cut by the length limit; summary requests → `SUMMARY-<n>`.
    `usage_tokens` sets the prompt size it reports (threshold tests)."""

    def __init__(self, fake: FakeOpenAI) -> None:
        self.fake = fake
        self.summaries = 0
        self.usage_tokens = 500
        fake.script(self._answer)

    def _usage(self) -> dict[str, Any]:
        return {"prompt_tokens": self.usage_tokens, "completion_tokens": 20, "total_tokens": self.usage_tokens + 20}

    def _answer(self, request: RecordedRequest) -> Reply:
        body = request.body or {}
        messages = body.get("messages", [])
        if is_summary_request(request):
            self.summaries += 1
            return Reply.stream(f"SUMMARY-{self.summaries}: goals, progress and next steps.", usage=self._usage())
        last = messages[-1] if messages else {}
        if "[[big]]" in _text(last.get("content")):
            # Report a nearly full context window so the threshold compaction runs after the turn.
            usage = {"prompt_tokens": 15000, "completion_tokens": 20, "total_tokens": 15020}
            return Reply.stream("A long answer for a large context.", usage=usage)
        usage_directive = _USAGE_DIRECTIVE.search(_text(last.get("content")))
        if usage_directive:  # this answer reports a prompt of that many tokens
            tokens = int(usage_directive.group(1))
            usage = {"prompt_tokens": tokens, "completion_tokens": 20, "total_tokens": tokens + 20}
            return Reply.stream(f"Answer: {_text(last.get('content'))[:60]}", usage=usage)
        if "[[length]]" in _text(last.get("content")):
            return Reply.stream("This answer stops in the midd", finish_reason="length", usage=self._usage())
        if last.get("role") == "tool":
            return Reply.stream("Done with the tool.", usage=self._usage())
        match = _TOOL_DIRECTIVE.search(_text(last.get("content")))
        if match:
            tool, path, text = match.group(1), match.group(2), match.group(3) or "new text"
            arguments: dict[str, Any] = {"path": path}
            if tool == "bash":
                arguments = {"command": f"cat {path}"}
            elif tool == "write":
                arguments["content"] = text + "\n"
            elif tool == "edit":
                arguments["edits"] = [{"oldText": "hello", "newText": text}]
            call = {
                "id": f"call_{len(self.fake.requests)}",
                "type": "function",
                "function": {"name": tool, "arguments": json.dumps(arguments)},
            }
            return Reply.stream([], tool_calls=[call], finish_reason="tool_calls", usage=self._usage())
        return Reply.stream(f"Answer: {_text(last.get('content'))[:60]}", usage=self._usage())


# --- one Pi home -----------------------------------------------------------------------------


class PiHome:
    """A temporary agent dir + working directory for one Pi package, talking to `fake`."""

    def __init__(self, install: Install, package: str, base: Path, fake: FakeOpenAI, **compaction: Any) -> None:
        self.install = install
        self.package = package
        self.agent_dir = base / "agent"
        self.cwd = base / "project"
        self.session_dir = base / "sessions"
        self.home = base / "home"
        for folder in (self.agent_dir, self.cwd, self.session_dir, self.home):
            folder.mkdir(parents=True, exist_ok=True)
        (self.cwd / "app.py").write_text("print('hello')\n")
        (self.cwd / "notes.md").write_text("# Notes\nhello world\n")
        (self.cwd / "big.txt").write_text("".join(f"line {i}: some recorded output\n" for i in range(150)))
        model = {
            "id": "fake-model",
            "name": "Fake",
            "reasoning": False,
            "input": ["text"],
            # oh-my-pi's own prompt and tools take ~15k tokens: give it room, or it compacts at once.
            "contextWindow": 200000 if package == OMP else 16000,
            "maxTokens": 2000,
            "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
        }
        provider = {"baseUrl": fake.url, "api": "openai-completions", "apiKey": "fake-key", "models": [model]}
        compaction_settings = {"enabled": True, "reserveTokens": 2000, "keepRecentTokens": 300, **compaction}
        if package == OMP:
            # oh-my-pi reads YAML; JSON is YAML.
            (self.agent_dir / "models.yml").write_text(json.dumps({"providers": {"fake": provider}}))
            config = {"modelRoles": {"default": "fake/fake-model"}, "compaction": compaction_settings,
                      "retry": {"enabled": False}}
            (self.agent_dir / "config.yml").write_text(json.dumps(config))
            return
        (self.agent_dir / "models.json").write_text(json.dumps({"providers": {"fake": provider}}))
        settings = {
            "defaultProvider": "fake",
            "defaultModel": "fake-model",
            "defaultThinkingLevel": "off",
            "compaction": compaction_settings,
            "retry": {"enabled": False},
        }
        (self.agent_dir / "settings.json").write_text(json.dumps(settings))

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
        env.update(
            HOME=str(self.home),
            PI_CODING_AGENT_DIR=str(self.agent_dir),
            PI_OFFLINE="1",
            PI_SKIP_VERSION_CHECK="1",
            PI_TELEMETRY="0",
        )
        return env

    def _node(self, script: str, *args: str, timeout: float = 180) -> str:
        # ES modules resolve bare imports from the script's own folder: run a copy beside the
        # install's node_modules.
        runnable = self.install.root / script
        shutil.copy2(PACKAGE_DIR / script, runnable)
        shutil.copy2(PACKAGE_DIR / "session_entries.mjs", self.install.root / "session_entries.mjs")  # shared by scripts
        done = subprocess.run(
            [self.install.node_for(self.package), str(runnable), self.package, *args],
            cwd=self.cwd,
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if done.returncode != 0:
            raise AssertionError(f"{script} ({self.package}) failed:\n{done.stderr[-6000:]}\n{done.stdout[-2000:]}")
        return done.stdout.strip().splitlines()[-1]

    def drive(self, steps: list[dict[str, Any]], session_file: Path | None = None) -> dict[str, Any]:
        scenario = {
            "agentDir": str(self.agent_dir),
            "cwd": str(self.cwd),
            "sessionDir": str(self.session_dir),
            "sessionFile": str(session_file) if session_file else None,
            "steps": steps,
        }
        path = self.session_dir.parent / "scenario.json"
        path.write_text(json.dumps(scenario))
        return json.loads(self._node("drive.mjs", str(path)))

    def omp_preparations(self, files: list[Path], keep: list[int], budgets: list[int]) -> dict[str, Any]:
        """oh-my-pi's own `prepareCompaction` for every leaf × `keep`, and `collectEntriesForBranchSummary`
        + `prepareBranchEntries` for every ordered pair of entries × `budgets` (pi/omp_prepare.mjs)."""
        path = self.session_dir.parent / "omp_prepare.json"
        path.write_text(json.dumps({"files": [str(f) for f in files], "keep": keep, "budgets": budgets}))
        return json.loads(self._node("omp_prepare.mjs", str(path), timeout=600))

    def contexts(self, *files: Path) -> dict[str, dict[str, Any]]:
        """Pi's `buildSessionContext` for every entry of each file taken as the leaf."""
        return json.loads(self._node("context.mjs", *(str(f) for f in files)))
