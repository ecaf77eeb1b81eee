"""The real Pi as a benchmark peer: installed from npm into `bench/peer/pi/` (pinned version and
lock file committed there), driven by `bench/peer/pi/measure.mjs` on the same files as compactd.

Nothing here runs unless a benchmark asks for the peer (`python -m bench --peer pi`); when node,
npm or the registry is missing the peer is skipped with the reason, never silently."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

from bench.harness import REPO_ROOT

PI_DIR = REPO_ROOT / "bench" / "peer" / "pi"
PI_PACKAGE = "@mariozechner/pi-coding-agent"
MIN_NODE_MAJOR = 20


def _installed() -> bool:
    return (PI_DIR / "node_modules" / PI_PACKAGE / "package.json").exists()


def pi_version() -> str | None:
    try:
        manifest = PI_DIR / "node_modules" / PI_PACKAGE / "package.json"
        return str(json.loads(manifest.read_text(encoding="utf-8"))["version"])
    except (OSError, ValueError, KeyError):
        return None


def ensure_pi() -> str | None:
    """Install the pinned Pi if needed. None when it is ready, else why the peer is skipped."""
    node = shutil.which("node")
    if node is None:
        return "node is not installed"
    try:
        version = subprocess.run([node, "--version"], capture_output=True, text=True, check=True).stdout
        major = int(version.strip().lstrip("v").split(".")[0])
    except (OSError, ValueError, subprocess.CalledProcessError) as exc:
        return f"cannot run node: {exc}"
    if major < MIN_NODE_MAJOR:
        return f"node {version.strip()} is too old (Pi needs >= {MIN_NODE_MAJOR})"
    if _installed():
        return None
    npm = shutil.which("npm")
    if npm is None:
        return "npm is not installed"
    # `npm ci`: exactly the lock file's versions; install scripts are not needed for the code measured.
    cmd = [npm, "ci", "--no-audit", "--no-fund", "--ignore-scripts", "--loglevel=error"]
    try:
        proc = subprocess.run(cmd, cwd=PI_DIR, capture_output=True, text=True, timeout=900, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"npm ci failed: {exc}"
    if proc.returncode != 0 or not _installed():
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        return "npm ci failed (is the npm registry reachable?): " + " | ".join(tail)
    return None


def run_pi(path: Path, repeats: int, timeout: float = 1800) -> dict[str, Any]:
    """Pi's timings on `path` (a copy: Pi rewrites v1/v2 files as v3 when opening them)."""
    node = shutil.which("node") or "node"
    # Large sessions need more than node's default heap (Pi keeps every entry and the raw lines).
    cmd = [node, "--max-old-space-size=8192", "measure.mjs", str(path), str(repeats)]
    proc = subprocess.run(cmd, cwd=PI_DIR, capture_output=True, text=True, timeout=timeout, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"Pi peer failed on {path.name}:\n{proc.stderr[-2000:]}")
    return dict(json.loads(proc.stdout.strip().splitlines()[-1]))
