"""Tables for the README's Performance section from a results file:
`python -m bench.readme [bench/out/results.json]` prints Markdown (ratios first)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from bench.harness import DEFAULT_JSON
from bench.sidebyside import goals, side_by_side


def _row(rows: list[dict[str, Any]], scenario: str, case_start: str) -> dict[str, Any] | None:
    return next((r for r in rows if r["scenario"] == scenario and r["case"].startswith(case_start)), None)


def _ms(row: dict[str, Any] | None, key: str = "median") -> str:
    if row is None:
        return "–"
    value = row.get(key)
    if value is None:
        value = row.get("derived", {}).get(key)
    return "–" if value is None else (f"{value:,.0f} ms" if value >= 100 else f"{value:.1f} ms")


def _host_stalls(row: dict[str, Any]) -> str:
    """What the host's stalls did to a row's requests (bench/host_stalls.py); nothing when none
    overlapped one, or the run did not record them."""
    derived = row.get("derived", {})
    stalled = derived.get("requests_in_host_stalls")
    if not stalled:
        return ""
    stalls = derived.get("host_stalls_ms") or []
    which = f"one of the host's {len(stalls)} stalls (up to {max(stalls)} ms each)" if len(stalls) > 1 else "a host stall"
    return (f"; {stalled} request{'s' if stalled > 1 else ''} overlapped {which}, "
            f"the most any other waited: {derived['max_outside_host_stalls']:.1f} ms")


def targets(rows: list[dict[str, Any]]) -> str:
    lines = ["| what | result | target |", "|---|---|---|"]
    for row in rows:
        if row["scenario"] == "daemon_token_stats":
            lines.append(f"| `session/tokenStats` right after one append, through the daemon ({row['case'].split(', ')[-1]}) "
                         f"| p50 {_ms(row)}, p99 {_ms(row, 'p99')}{_host_stalls(row)} | < 5 ms |")
        elif row["scenario"] == "stats_incremental" and row["case"].startswith("after append") and "k entries" in row["case"]:
            lines.append(f"| token statistics after one append, in process ({row['case'].removeprefix('after append ')}) "
                         f"| {_ms(row)} | < 5 ms |")
    first = _row(rows, "daemon_first_count", "first tokenStats")
    others = _row(rows, "daemon_first_count", "session/entry while")
    if first and others:
        worst = max(others["samples"])
        lines.append(f"| other requests (`session/entry`) while the first `tokenStats` counts "
                     f"{first['case'].split(', ')[-1]} uncompacted exactly ({_ms(first)}) "
                     f"| p50 {_ms(others)}, p99 {_ms(others, 'p99')}, max {worst:.1f} ms ({others['runs']} requests)"
                     f"{_host_stalls(others)} | max ≤ 20 ms |")
    for row in rows:
        if row["scenario"] == "cli_prepare":
            parts = row["case"].split(", ")
            flags = " --show-text" if parts[-1] == "with text" else ""
            where = ", ".join(p for p in parts[1:] if p != "with text")
            lines.append(f"| `{parts[0]} FILE --json{flags}` wall time, {where} "
                         f"({row['extra']['bytes'] / 1e6:.0f} MB) | {row['median']:.2f} s | ≤ 2 s |")
    rss = [r for r in rows if r["scenario"] == "vs_pi" and r["extra"]["vs"]["step"] == "rss"
           and "Δrss/size" in r.get("derived", {}) and r["extra"]["bytes"] > 1_000_000]
    if rss:
        values = [r["derived"]["Δrss/size"] for r in rss]
        lines.append(f"| peak RSS after open ÷ file size (interpreter excluded), files over 1 MB "
                     f"| {min(values):.2f}–{max(values):.2f}× | ≤ 3× |")
    for row in rows:
        if row["scenario"] == "session_views" and row["case"].startswith("tree") and "k entries" in row["case"]:
            lines.append(f"| `session/tree` ({row['case'].removeprefix('tree ')}, every node) | {_ms(row)} "
                         f"| a panel pages instead (below) |")
    for row in rows:
        if row["scenario"] == "daemon_tree" and row["case"].startswith(("first screen", "screen", "page")):
            lines.append(f"| `session/tree` through the daemon, {row['case']} (`limit` {row['extra']['limit']}) "
                         f"| p50 {_ms(row)}, p99 {_ms(row, 'p99')} | first screen ≤ 50 ms |")
        elif row["scenario"] == "daemon_tree" and row["case"].startswith("every node"):
            lines.append(f"| `session/tree` through the daemon, {row['case']} | {_ms(row)} | a panel pages instead |")
    for row in rows:
        if row["scenario"] == "daemon_roundtrip":
            lines.append(f"| daemon round trip, {row['case'].removeprefix('session/entry ')} "
                         f"| p50 {_ms(row)}, p99 {_ms(row, 'p99')} | p99 < 20 ms |")
    return "\n".join(lines)


def _max_wait(row: dict[str, Any] | None) -> float | None:
    """The longest a request waited in `row`, leaving out those a host stall overlapped."""
    if row is None:
        return None
    derived = row.get("derived", {})
    value = derived.get("max_outside_host_stalls")
    return float(value) if value is not None else max(row["samples"])


def verdicts(rows: list[dict[str, Any]]) -> str:
    """Issue 29's targets, each judged met or not met from this run's rows."""
    lines = ["| target | this run | |", "|---|---|---|"]
    lines += [f"| {target} | {result} | {verdict} |" for target, result, verdict in goals(rows)]
    waits = [(what, _max_wait(_row(rows, scenario, case))) for what, scenario, case in (
        ("the first exact count of 100k entries", "daemon_first_count", "session/entry while"),
        ("the whole tree of 100k entries, streamed (one long path)", "daemon_tree",
         "session/entry while every node is streamed (partialResultToken), 100k entries, one long path"),
        ("the whole tree of 100k entries, streamed (branches)", "daemon_tree",
         "session/entry while every node is streamed (partialResultToken), 100k entries, compacted"),
        ("another session's compaction", "daemon_roundtrip", "session/entry while another session compacts"),
    )]
    measured = [(what, wait) for what, wait in waits if wait is not None]
    if measured:
        worst = max(wait for _, wait in measured)
        detail = "; ".join(f"{what}: {wait:.1f} ms" for what, wait in measured)
        missing = [what for what, wait in waits if wait is None]
        if missing:
            detail += "; not measured: " + ", ".join(missing)
        lines.append(f"| never wait: no request waits more than 20 ms behind another's work (requests a host "
                     f"stall overlapped left out) | {detail} | {'met' if worst <= 20 and not missing else '**not met**'} |")
    for row in rows:
        if row["scenario"] == "cli_prepare" and row["case"].endswith("uncompacted, with text"):
            ok = row["median"] <= 2.0
            lines.append(f"| `compactd prepare --show-text` on 100k entries ≤ 2 s | {row['median']:.2f} s (uncompacted) "
                         f"| {'met' if ok else '**not met**'} |")
    rss = [r["derived"]["Δrss/size"] for r in rows if r["scenario"] == "vs_pi" and r["extra"]["vs"]["step"] == "rss"
           and "Δrss/size" in r.get("derived", {}) and r["extra"]["bytes"] > 1_000_000]
    if rss:
        lines.append(f"| peak RSS after open ≤ 3 × the file | {min(rss):.2f}–{max(rss):.2f}× "
                     f"| {'met' if max(rss) <= 3 else '**not met**'} |")
    return "\n".join(lines) if len(lines) > 2 else ""


def main(argv: list[str]) -> int:
    path = Path(argv[0]) if argv else DEFAULT_JSON
    data = json.loads(path.read_text(encoding="utf-8"))
    rows = data["results"]
    meta = data["meta"]
    print(f"<!-- generated by `python -m bench.readme {path}` from commit {meta.get('commit')}, "
          f"{meta.get('started')} -->\n")
    if meta.get("compiled") is False:
        print("**Measured with the interpreted modules** (built without mypyc, or COMPACTD_PURE=1).\n")
    judged = verdicts(rows)
    if judged:
        print(judged)
        print()
    print(side_by_side(rows))
    print()
    print(targets(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
