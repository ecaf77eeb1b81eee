"""compactd's session code timed on one session file in a fresh process, as `bench/peer/pi/measure.mjs`
times Pi's: the side-by-side benchmark runs both per file, so neither carries the heap of earlier
files and cases (a long-lived harness process made compactd's collector passes longer, ~1.5-2x on
20k entries).

    python -m bench.measure_compactd FILE REPEATS

Prints one JSON object: milliseconds per repetition for each step.
  open              Session.open(file)
  context           context_report(session)                  the messages the model sees
  prepare           prepare_report(session)                  the dry run, conversation text included
  prepareNoText     prepare_compaction(prepare_path_for(session))  the preparation alone, on the
                                                             tail the dry run reads
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

from compactd.compaction.prepare import prepare_compaction
from compactd.compaction.reports import prepare_path_for, prepare_report
from compactd.session import Session
from compactd.session.views import context_report


def samples(fn: Callable[[], object], repeats: int, min_seconds: float = 0.3) -> list[float]:
    """One untimed warm-up, then at least `repeats` runs and, for fast steps, runs until
    `min_seconds` have passed (at most 10 × repeats): the rule measure.mjs follows."""
    fn()
    out: list[float] = []
    while len(out) < repeats or (sum(out) < min_seconds * 1000 and len(out) < 10 * repeats):
        t0 = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t0) * 1000)
    return out


def measure(path: Path, repeats: int) -> dict[str, list[float]]:
    session = Session.open(path)
    return {
        "open": samples(lambda: Session.open(path), repeats),
        "context": samples(lambda: context_report(session), repeats),
        "prepare": samples(lambda: prepare_report(session), repeats),
        "prepareNoText": samples(lambda: prepare_compaction(prepare_path_for(session)), repeats),
    }


def main(argv: list[str]) -> int:
    path, repeats = Path(argv[0]), int(argv[1]) if len(argv) > 1 else 5
    sys.stdout.write(json.dumps(measure(path, repeats)) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
