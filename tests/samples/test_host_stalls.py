"""The benchmark's record of the machine's own stalls (bench/host_stalls.py): the sampler process
reads per-CPU steal from a /proc/stat-shaped file, and requests are matched to the steal they overlap."""

from __future__ import annotations

import os
import time
from pathlib import Path

from bench.host_stalls import HostStalls, Steal, parse_samples, steal_ticks

TICK_MS = 1000 / os.sysconf("SC_CLK_TCK")


def _stat(steal0: int, steal1: int) -> bytes:
    # user nice system idle iowait irq softirq steal guest guest_nice
    return (f"cpu  10 0 5 900 0 0 0 {steal0 + steal1} 0 0\n"
            f"cpu0 5 0 2 450 0 0 0 {steal0} 0 0\n"
            f"cpu1 5 0 3 450 0 0 0 {steal1} 0 0\n"
            "intr 12345\nctxt 999\n").encode()


def _replace(path: Path, data: bytes) -> None:
    """Whole, as the kernel serves /proc/stat: the sampler never reads half a file."""
    tmp = path.with_suffix(".tmp")
    tmp.write_bytes(data)
    tmp.replace(path)


def test_steal_is_read_per_cpu_without_the_total() -> None:
    assert steal_ticks(_stat(7, 40)) == [7, 40]
    assert steal_ticks(b"cpu  1 2 3 4\ncpu0 1 2 3 4\n") == []  # a kernel without steal accounting


def test_the_sampler_process_reports_each_cpus_growth(tmp_path: Path) -> None:
    stat = tmp_path / "stat"
    stat.write_bytes(_stat(3, 3))
    with HostStalls(max_seconds=30, stat=stat) as host:
        time.sleep(0.3)  # the sampler has read the starting counters
        before = time.perf_counter()
        _replace(stat, _stat(3, 13))  # cpu1 away for ten ticks
        time.sleep(0.3)
        after = time.perf_counter()
    assert [(s.cpu, s.ms) for s in host.steals] == [(1, 10 * TICK_MS)]
    assert before < host.steals[0].seen_at < after  # the same clock as the caller's perf_counter
    assert host.stalls == host.steals  # 100 ms (at the usual 100 ticks/s) counts as a stall


def test_a_request_overlapping_a_stall_is_attributed_to_it() -> None:
    host = HostStalls()
    host.steals = parse_samples("[10.0, 0, 100.0]\n[20.0, 1, 10.0]\n")
    assert host.steals[0] == Steal(10.0, 0, 100.0)
    assert host.stalled_ms(9.95, 10.01) == 100.0  # ran while CPU 0 was away (9.9-10.0)
    assert host.stalled_ms(9.85, 9.89) == 0  # ended before the CPU was taken
    assert host.stalled_ms(10.01, 10.05) == 0  # started after it was back
    assert host.stalled_ms(19.99, 20.0) == 0  # one tick of steal accounting is not a stall
    assert host.stalled_ms(9.0, 21.0) == 100.0
    assert host.stalls == [Steal(10.0, 0, 100.0)]


def test_without_steal_accounting_nothing_is_started(tmp_path: Path) -> None:
    stat = tmp_path / "stat"
    stat.write_bytes(b"cpu  1 2 3 4\ncpu0 1 2 3 4\n")
    with HostStalls(stat=stat) as host:
        pass
    assert host.steals == [] and host._process is None
