"""`python -m bench.quality [--smoke] [--show REGION] [--contender NAME]`: the detailed quality report."""

from __future__ import annotations

import argparse
import sys

from .run import all_regions, configured_model, details, evaluate, table


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.quality", description="probe-based summary quality")
    p.add_argument("--smoke", action="store_true", help="3 generated stories instead of 12")
    p.add_argument("--contender", default="embedded", help="whose failed probes to list (default: embedded)")
    p.add_argument("--show", metavar="REGION", help="print that contender's summary of the region (name prefix)")
    args = p.parse_args(argv)
    regions = all_regions(smoke=args.smoke)
    report = evaluate(regions, model=configured_model())
    print(table(report))
    print()
    print(details(report, args.contender))
    if args.show:
        for r in report.results:
            if r.contender == args.contender and r.region.name.startswith(args.show):
                print(f"\n===== {r.region.name} ({r.contender})\n{r.text}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
