"""`python -m bench [--smoke] [--only NAME ...] [--peer pi] [--split dev|heldout] [--json OUT] [--repeat N] [--list]`."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from bench.harness import (
    DEFAULT_DATA_DIR,
    DEFAULT_JSON,
    SCENARIOS,
    Context,
    child_main,
    environment,
    load_scenarios,
    run_case,
)
from bench.sidebyside import side_by_side


def _fmt(v: float) -> str:
    if abs(v) >= 100:
        return f"{v:,.0f}"
    if abs(v) >= 1:
        return f"{v:.2f}"
    return f"{v:.4f}"


def print_table(rows: list[dict[str, Any]]) -> None:
    header = ("scenario", "case", "median", "min–max", "unit", "runs", "peak RSS", "derived")
    table = [header] + [(
        r["scenario"], r["case"], _fmt(r["median"]), f"{_fmt(r['min'])}–{_fmt(r['max'])}", r["unit"],
        str(r["runs"]), f"{r['peak_rss_mb']:.0f} MiB" if "peak_rss_mb" in r else "",
        "  ".join(f"{k}={_fmt(v) if isinstance(v, (int, float)) else v}" for k, v in r.get("derived", {}).items()),
    ) for r in rows]
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    right = {2, 3, 5, 6}
    for n, row in enumerate(table):
        print("  ".join(c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(row, widths))))
        if n == 0:
            print("  ".join("-" * w for w in widths))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench", description="compactd benchmarks")
    p.add_argument("--smoke", action="store_true", help="tiny inputs, few runs: finishes in seconds")
    p.add_argument("--only", action="append", metavar="NAME", help="run only this scenario (repeatable)")
    p.add_argument("--json", type=Path, default=DEFAULT_JSON, metavar="OUT", help=f"results file (default {DEFAULT_JSON})")
    p.add_argument("--repeat", type=int, default=None, metavar="N", help="repetitions per case (default 5; smoke 3)")
    p.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR, help="where generated inputs are cached")
    p.add_argument("--list", action="store_true", help="list scenarios and exit")
    p.add_argument("--case", action="append", metavar="TEXT", help="run only cases whose label contains TEXT (repeatable)")
    p.add_argument("--peer", choices=("pi",), help="measure the real Pi beside compactd (scenario vs_pi; "
                   "installs the pinned Pi from npm into bench/peer/pi on first use)")
    p.add_argument("--split", choices=("dev", "heldout"), help="summary_quality: only the development or the "
                   "held-out regions (bench/quality/split.json)")
    p.add_argument("--child", nargs=2, metavar=("SCENARIO", "CASE"), help=argparse.SUPPRESS)
    p.add_argument("--stamp", help=argparse.SUPPRESS)
    args = p.parse_args(argv)

    if args.child:
        return child_main(args.child[0], args.child[1], args.smoke, args.data_dir, args.stamp)

    load_scenarios()
    if args.list:
        for s in SCENARIOS.values():
            print(f"{s.name:20} {s.description}")
        return 0
    # --peer alone means the side-by-side scenario; other scenarios only when asked for.
    names = args.only or (["vs_pi"] if args.peer else list(SCENARIOS))
    unknown = [n for n in names if n not in SCENARIOS]
    if unknown:
        p.error(f"unknown scenario(s): {', '.join(unknown)}; known: {', '.join(SCENARIOS)}")

    ctx = Context(smoke=args.smoke, repeats=args.repeat or (3 if args.smoke else 5), data_dir=args.data_dir,
                  peer=args.peer, split=args.split)
    started = time.perf_counter()
    rows: list[dict[str, Any]] = []
    for name in names:
        for case in SCENARIOS[name].func(ctx):
            if args.case and not any(text in case.label for text in args.case):
                continue
            print(f"… {name}: {case.label}", file=sys.stderr, flush=True)
            rows.append(run_case(name, case, ctx))
    print_table(rows)
    compared = side_by_side(rows)
    if compared:
        print("\n" + compared)

    out = {"meta": {**environment(), "smoke": args.smoke, "repeats": ctx.repeats, "peer": args.peer,
                    "split": args.split,
                    "elapsed_s": round(time.perf_counter() - started, 3)},
           "results": rows}
    if compared:
        out["sideBySide"] = compared
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")
    print(f"\nwrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
