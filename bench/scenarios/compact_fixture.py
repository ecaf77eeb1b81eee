"""End-to-end compaction of the real Pi fixture (a copy in a temp folder) with the embedded
extractive summarizer: open, prepare, summarize, append the compaction entry to the file.
Measured in-process (`engine.compactor.compact`) and as the `compactd compact` command."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

from compactd.engine.compactor import compact
from compactd.engine.settings import build_summarizer, load_settings
from compactd.session import Session

from bench import Case, Context, scenario


@scenario("compact_fixture", description="compact the real Pi fixture end to end, embedded summarizer (ms)")
def compact_fixture(ctx: Context) -> Iterator[Case]:
    fixture = ctx.fixture()
    if fixture is None:
        return
    tmp = Path(tempfile.mkdtemp(prefix="compactd-bench-compact-"))
    agent = tmp / "agent"
    agent.mkdir()
    env = {"PI_CODING_AGENT_DIR": str(agent)}  # no user settings: the extractive default
    copy = tmp / "session.jsonl"
    clean_env = {k: v for k, v in os.environ.items()
                 if k not in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "COMPACTD_MODEL", "COMPACTD_SUMMARIZER")}

    def fresh_copy() -> None:
        shutil.copyfile(fixture, copy)

    def in_process() -> object:
        session = Session.open(copy)
        settings = load_settings(str(tmp), env=env)
        summarizer = build_summarizer(settings, env=env)
        return asyncio.run(compact(session, settings, summarizer, reason="manual", tool_results_timeout=0))

    def command() -> None:
        subprocess.run([sys.executable, "-m", "compactd", "compact", str(copy), "--json"], cwd=tmp, check=True,
                       env={**clean_env, **env}, capture_output=True)

    mb = ctx.megabytes(fixture)
    yield Case("in-process (open + compact + write)", in_process, unit="ms", setup=fresh_copy,
               extra={"fixture_mb": round(mb, 2)})
    yield Case("`compactd compact` command", command, unit="ms", setup=fresh_copy, max_repeats=3,
               after=lambda r: shutil.rmtree(tmp, ignore_errors=True))
