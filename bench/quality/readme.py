"""The tables of the README's "Summary quality" section from a results file:
`python -m bench.quality.readme [bench/out/results.json]` prints Markdown, held-out regions first.

The file is what `python -m bench --only summary_quality` wrote; each contender's row carries the
per-region totals (`extra.per_region`), never a probe or a summary.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from bench.harness import DEFAULT_JSON
from compactd.samples.probes import CATEGORIES

from .run import HANDOVER, STORED
from .split import DEV, HELDOUT, load_split

Regions = dict[str, dict[str, Any]]  # region name -> per-region totals of one contender
GUARDS = ("guard: file paths", "guard: raw text")


def load(file: Path) -> dict[str, Regions]:
    rows = json.loads(file.read_text(encoding="utf-8"))["results"]
    out = {r["case"]: r["extra"]["per_region"] for r in rows
           if r["scenario"] == "summary_quality" and "per_region" in r.get("extra", {})}
    if "embedded" not in out:
        raise SystemExit(f"{file}: no summary_quality results with per-region totals; run "
                         "`python -m bench --only summary_quality` first")
    return out


def total(regions: Regions, names: Iterable[str]) -> dict[str, Any]:
    acc: dict[str, Any] = {"passed": 0, "total": 0, "forbidden": 0, "categories": {}}
    for n in names:
        r = regions.get(n)
        if r is None:
            continue
        acc["passed"] += r["passed"]
        acc["total"] += r["total"]
        acc["forbidden"] += r["forbidden"]
        for c, (p, t) in r["categories"].items():
            old = acc["categories"].get(c, (0, 0))
            acc["categories"][c] = (old[0] + p, old[1] + t)
    return acc


def pct(p: int, t: int) -> str:
    return f"{100 * p / t:.0f}%" if t else "–"


def cell(r: dict[str, Any] | None, *, bold: bool = False) -> str:
    if not r or not r["total"]:
        return "–"
    share = pct(r["passed"], r["total"])
    bad = f", {r['forbidden']} forbidden" if r["forbidden"] else ""
    return f"{r['passed']}/{r['total']} ({'**' + share + '**' if bold else share}){bad}"


def kind(name: str, source: str) -> str:
    if name.startswith("external/"):
        return "real, Claude Code, Codex or Cursor"
    if source == "real":
        return "real, Pi"
    return {"corpus": "authored corpus", "generated": "generated"}.get(source, source)


def groups(embedded: Regions, side: str) -> list[tuple[str, list[str]]]:
    """(label, region names) per kind of region on one side of the split, real first."""
    names = [n for n, r in embedded.items() if r["split"] == side]
    order = ("real, Claude Code, Codex or Cursor", "real, Pi", "authored corpus", "generated")
    out = []
    for k in order:
        members = [n for n in names if kind(n, embedded[n]["source"]) == k]
        if members:
            out.append((k, members))
    return out


def region_table(data: dict[str, Regions], side: str) -> str:
    embedded = data["embedded"]
    stored, handover = data.get(STORED, {}), data.get(HANDOVER, {})
    lines = ["| region | kind | embedded | model-written | hand-written handover |", "|---|---|---|---|---|"]
    for label, names in groups(embedded, side):
        if label == "generated":  # twelve template stories: one row
            lines.append(f"| story seeds ({len(names)}) | generated | {cell(total(embedded, names))} | – | – |")
            continue
        for n in names:
            lines.append(f"| {n} | {label} | {cell(embedded[n])} | {cell(stored.get(n))} | {cell(handover.get(n))} |")
        if len(names) > 1:
            lines.append(f"| **all {label}** | | {cell(total(embedded, names), bold=True)} | "
                         f"{cell(total(stored, names), bold=True)} | {cell(total(handover, names))} |")
    return "\n".join(lines)


def category_table(data: dict[str, Regions], side: str) -> str:
    embedded = data["embedded"]
    lines = ["| contender | regions | " + " | ".join(CATEGORIES) + " | overall | forbidden |",
             "|---" * (len(CATEGORIES) + 4) + "|"]

    def row(contender: str, label: str, names: list[str]) -> None:
        t = total(data.get(contender, {}), names)
        if not t["total"]:
            return
        cats = [pct(*t["categories"][c]) if c in t["categories"] else "–" for c in CATEGORIES]
        lines.append(f"| {contender} | {label} ({t['total']} probes) | " + " | ".join(cats)
                     + f" | **{pct(t['passed'], t['total'])}** | {t['forbidden']} |")

    every = [n for n, r in embedded.items() if r["split"] == side]
    for label, names in groups(embedded, side):
        row("embedded", label, names)
        anchored = [n for n in names if n in data.get(STORED, {})]
        if anchored:
            row(STORED, label, anchored)
    for guard in GUARDS:
        row(guard, f"all {'held-out' if side == HELDOUT else 'development'}", every)
    return "\n".join(lines)


def markdown(data: dict[str, Regions]) -> str:
    frozen = load_split().frozen
    return "\n\n".join([
        f"**Held-out regions** (split frozen {frozen}; never read while changing the summarizer)",
        region_table(data, HELDOUT), category_table(data, HELDOUT),
        "**Development regions** (read while working on the summarizer; their scores say little about "
        "sessions it has not seen)",
        region_table(data, DEV), category_table(data, DEV),
    ])


def main(argv: list[str]) -> int:
    file = Path(argv[0]) if argv else DEFAULT_JSON
    print(markdown(load(file)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
