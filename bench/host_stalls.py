"""The machine's own stalls during a measurement, so a slow request can be told apart from a slow daemon.

On the VM this benchmark runs on, the host takes a virtual CPU away for ~100 ms at a time (steal
time) when both are busy for a while: plain busy loops without compactd show it, and a process that
only sleeps 1 ms at a time then wakes 100 ms late. A scenario whose client keeps one CPU busy while
the daemon's worker keeps the other busy meets these stalls every 10-15 s.

`HostStalls` runs a small sampler process that reads each CPU's steal counter in /proc/stat every
2 ms and records when it grows; `stalled_ms(start, end)` is the stalls' time that overlaps a request.
On a system without /proc/stat (or without steal accounting) nothing is recorded.

    python -m bench.host_stalls SECONDS [STAT]   the sampler itself: one JSON line per growth
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

PROC_STAT = Path("/proc/stat")
SAMPLE_EVERY_S = 0.002
# A growth this large in one sample is the host taking the CPU, not the odd tick of accounting.
STALL_FROM_MS = 50.0
_STEAL_FIELD = 8  # "cpuN user nice system idle iowait irq softirq steal ..."


def steal_ticks(stat: bytes) -> list[int]:
    """Each CPU's steal counter (clock ticks) from the text of /proc/stat; [] when it has none."""
    out = []
    for line in stat.split(b"\n"):
        if line.startswith(b"cpu") and not line.startswith(b"cpu "):
            fields = line.split()
            if len(fields) <= _STEAL_FIELD:
                return []
            out.append(int(fields[_STEAL_FIELD]))
    return out


@dataclass(frozen=True)
class Steal:
    """Steal on one CPU that the sampler saw grow between two reads, the later one at `seen_at`
    (time.perf_counter: CLOCK_MONOTONIC on Linux, the same clock in every process)."""

    seen_at: float
    cpu: int
    ms: float

    def overlaps(self, start: float, end: float) -> bool:
        # The CPU was away for `ms` before the read that saw it, give or take one sample.
        return self.seen_at - self.ms / 1000 - SAMPLE_EVERY_S < end and self.seen_at > start


def parse_samples(text: str) -> list[Steal]:
    out = []
    for line in text.splitlines():
        if line.strip():
            seen_at, cpu, ms = json.loads(line)
            out.append(Steal(seen_at, cpu, ms))
    return out


class HostStalls:
    """`with HostStalls() as stalls:` around a measurement; afterwards `stalls.stalls` holds the
    large steals (≥ STALL_FROM_MS), `stalled_ms(start, end)` their time overlapping an interval."""

    def __init__(self, max_seconds: float = 3600, stat: Path = PROC_STAT) -> None:
        self.max_seconds = max_seconds
        self.stat = stat
        self.steals: list[Steal] = []
        self._process: subprocess.Popen[str] | None = None

    def __enter__(self) -> HostStalls:
        if self.stat.exists() and steal_ticks(self.stat.read_bytes()):
            self._process = subprocess.Popen(
                [sys.executable, "-m", "bench.host_stalls", str(self.max_seconds), str(self.stat)],
                stdout=subprocess.PIPE, text=True, cwd=Path(__file__).resolve().parent.parent,
            )
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self._process is None:
            return
        self._process.terminate()
        out, _ = self._process.communicate(timeout=30)
        self.steals = parse_samples(out)

    @property
    def stalls(self) -> list[Steal]:
        return [s for s in self.steals if s.ms >= STALL_FROM_MS]

    def stalled_ms(self, start: float, end: float) -> float:
        """The stalls' time overlapping [start, end]; the odd tick of steal does not count."""
        return sum(s.ms for s in self.stalls if s.overlaps(start, end))


def sample(seconds: float, stat: Path = PROC_STAT) -> None:
    """Print one line [seen_at, cpu, ms] each time a CPU's steal grows, until killed or `seconds` pass."""
    tick_ms = 1000 / os.sysconf("SC_CLK_TCK")
    previous = steal_ticks(stat.read_bytes())
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        time.sleep(SAMPLE_EVERY_S)
        current = steal_ticks(stat.read_bytes())
        if len(current) != len(previous):  # a CPU brought online or offline: compare from here on
            previous = current
            continue
        now = time.perf_counter()
        for cpu, (before, after) in enumerate(zip(previous, current)):
            if after > before:
                sys.stdout.write(json.dumps([now, cpu, (after - before) * tick_ms]) + "\n")
                sys.stdout.flush()  # the parent ends this process with SIGTERM: nothing may wait in a buffer
        previous = current


if __name__ == "__main__":
    try:
        sample(float(sys.argv[1]) if len(sys.argv) > 1 else 3600, Path(sys.argv[2]) if len(sys.argv) > 2 else PROC_STAT)
    except KeyboardInterrupt:
        pass
