"""Running a transcript converter as its command line does, and reading back what it wrote."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

from compactd.session import Session

from ..conftest import REPO_ROOT


def convert_file(module: str, transcript: str, folder: Path, *args: str) -> tuple[list[dict[str, Any]], str]:
    """`python -m MODULE SOURCE OUT --summary SUMMARY *args` on `transcript`: the converted file's
    branch (checked to be one linear chain) and the summary text it wrote."""
    source = folder / "transcript.md"
    source.write_text(transcript, encoding="utf-8")
    out, summary = folder / "pi.jsonl", folder / "summary.txt"
    proc = subprocess.run([sys.executable, "-m", module, str(source), str(out), "--summary", str(summary), *args],
                          cwd=REPO_ROOT, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    branch = Session.open(out).get_branch()
    assert [e.get("parentId") for e in branch[1:]] == [e["id"] for e in branch[:-1]]
    return branch, summary.read_text(encoding="utf-8")
