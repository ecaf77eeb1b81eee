"""Writes the e2e suite's Pi 1.6 and oh-my-pi session files with the REAL programs (issue 27): Pi
1.6.0 and oh-my-pi 18.2.3, installed from npm by tests/interop (package-lock in tests/interop/pi),
driven offline through their SDKs (tests/interop/pi/drive.mjs) against the local fake OpenAI model
(tests/interop/harness.py). The files are committed under tests/fixtures/real-programs/ as written
(the e2e suite and tests/engine read them); run this again
after changing the scenarios:

    .venv/bin/python client-vscode/e2e/make_real_sessions.py

Pi 1.6 writes its context edits itself: an answer cut by the length limit is omitted
(`replacement: null`, Q16-25a) before its recovery compaction; the replacing edit is written by
Pi's own `SessionManager.appendContextEdit`, the call an extension makes (Q16-25c), since nothing
in Pi 1.6 replaces a message without an extension. oh-my-pi compacts on `/compact` and records its
own `tokensAfter` and `method`."""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from tests.interop.harness import OMP, PI_16, FakeModel, PiHome, ensure_installed  # noqa: E402
from tests.support.fake_openai import FakeOpenAI  # noqa: E402

FIXTURES = REPO / "tests" / "fixtures" / "real-programs"
PI16_FILE = FIXTURES / "pi-1.6.0-context-edits.jsonl"
OMP_FILE = FIXTURES / "oh-my-pi-18.2.3-compacted.jsonl"

# Enough text per prompt that a compaction keeping 300 tokens has something to summarize.
FILLER = " ".join(f"detail-{i} of the plan" for i in range(40))

PI16_STEPS = [
    {"op": "prompt", "text": "Read app.py and tell me what it prints [[read app.py]]"},
    {"op": "prompt", "text": "Paste the whole build log here [[length]]"},
    {"op": "contextEdit", "target": {"userText": "Read app.py", "answer": True},
     "replacement": "(answer shortened by an extension)"},
    {"op": "prompt", "text": "Now change the greeting [[edit app.py goodbye]]"},
]

OMP_STEPS = [
    {"op": "prompt", "text": f"Read notes.md and plan the loader refactor [[read notes.md]]. {FILLER}"},
    {"op": "prompt", "text": f"Record the plan [[write plan.md step-one]]. {FILLER}"},
    {"op": "prompt", "text": f"Think the plan through [[usage 9000]]. {FILLER}"},
    {"op": "compact"},
    {"op": "name", "name": "Refactor the notes loader"},
    {"op": "prompt", "text": "Go on with the refactor"},
]


def main() -> None:
    install = ensure_installed()
    FIXTURES.mkdir(parents=True, exist_ok=True)
    with FakeOpenAI() as fake, tempfile.TemporaryDirectory() as tmp:
        model = FakeModel(fake)
        for package, steps, target in ((PI_16, PI16_STEPS, PI16_FILE), (OMP, OMP_STEPS, OMP_FILE)):
            home = PiHome(install, package, Path(tmp) / package.split("/")[0].lstrip("@"), model.fake)
            written = home.drive(steps)
            shutil.copyfile(written["sessionFile"], target)
            print(f"{target.relative_to(REPO)}: {sum(1 for _ in target.open())} lines, {written['results']}")


if __name__ == "__main__":
    main()
