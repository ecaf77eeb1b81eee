"""`python -m bench.quality [--smoke] [--split dev|heldout] [--show REGION] [--contender NAME]`: the
detailed quality report. Failed probes and summaries are shown for development regions only."""

from __future__ import annotations

import argparse
import sys

from .run import all_regions, configured_model, details, evaluate, split_report
from .split import HELDOUT


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.quality", description="probe-based summary quality")
    p.add_argument("--smoke", action="store_true", help="3 generated stories instead of 12")
    p.add_argument("--split", choices=("dev", "heldout"), help="only the development or the held-out regions")
    p.add_argument("--contender", default="embedded", help="whose failed probes to list (default: embedded)")
    p.add_argument("--show", metavar="REGION", help="print that contender's summary of a development region (name prefix)")
    args = p.parse_args(argv)
    regions = all_regions(smoke=args.smoke, split=args.split)
    report = evaluate(regions, model=configured_model())
    print(split_report(report))
    print()
    print(details(report, args.contender))
    if args.show:
        for r in report.results:
            if r.contender == args.contender and r.region.name.startswith(args.show):
                if r.region.split == HELDOUT:
                    print(f"\n===== {r.region.name}: held out, not shown (bench/quality/split.json)")
                    continue
                print(f"\n===== {r.region.name} ({r.contender})\n{r.text}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
