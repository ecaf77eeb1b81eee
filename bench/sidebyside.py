"""The side-by-side table of `python -m bench --peer pi`: compactd ÷ Pi per file and step, from the
result rows of the `vs_pi` scenario (their `extra.vs` tags). Markdown, so the README's
Performance section can be regenerated from a run."""

from __future__ import annotations

from typing import Any

STEPS = ("open", "context", "prepare", "prepare at a new leaf", "prepare, no text")
# Steps only the daemon has: compactd in process has no column, and Pi's figure is its own run of
# the same step (results from before Pi measured it: this step of Pi). The daemon's repeated dry
# run at one leaf is answered from memory; at a new leaf it is computed each time.
_BASELINE = {"prepare at a new leaf": "prepare"}


def _ms(value: float | None) -> str:
    if value is None:
        return "–"
    if value >= 100:
        return f"{value:,.0f} ms"
    if value >= 10:
        return f"{value:.1f} ms"
    return f"{value:.2f} ms"


def _ratio(ours: float | None, pi: float | None) -> str:
    if ours is None or pi is None or pi <= 0:
        return "–"
    return f"**{ours / pi:.2f}**"


def collect(rows: list[dict[str, Any]]) -> dict[str, dict[str, dict[str, dict[str, Any]]]]:
    """file → step → impl → row."""
    out: dict[str, dict[str, dict[str, dict[str, Any]]]] = {}
    for row in rows:
        tag = row.get("extra", {}).get("vs")
        if tag:
            out.setdefault(tag["file"], {}).setdefault(tag["step"], {})[tag["impl"]] = row
    return out


def side_by_side(rows: list[dict[str, Any]]) -> str:
    """Medians per step; ratios first. Empty when no vs_pi rows were measured."""
    table = collect(rows)
    if not table:
        return ""
    lines = [
        "| file | step | compactd ÷ Pi | daemon ÷ Pi | stdio floor ÷ Pi | Pi | compactd | compactd via daemon "
        "| stdio floor |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for file, steps in table.items():
        first = True
        size = next((r["extra"].get("bytes") for s in steps.values() for r in s.values()), None)
        name = f"{file} ({size / 1e6:.1f} MB)" if first and size else file
        for step in STEPS:
            impls = steps.get(step)
            if not impls:
                continue
            base = steps.get(_BASELINE.get(step, step), {})
            pi = (impls.get("pi") or base.get("pi", {})).get("median")
            ours = base.get("compactd", {}).get("median") if step not in _BASELINE else None
            daemon = impls.get("daemon", {}).get("median")
            floor = impls.get("floor", {}).get("median")
            lines.append(f"| {name if first else ''} | {step} | {_ratio(ours, pi)} | {_ratio(daemon, pi)} | "
                         f"{_ratio(floor, pi)} | {_ms(pi)} | {_ms(ours)} | {_ms(daemon)} | {_ms(floor)} |")
            first = False
        rss_pi = steps.get("open", {}).get("pi", {}).get("derived", {}).get("Δrss/size")
        rss_ours = steps.get("rss", {}).get("compactd", {}).get("derived", {}).get("Δrss/size")
        if (rss_pi is not None or rss_ours is not None) and (size or 0) >= 1_000_000:  # tiny files: noise
            ratio = f"**{rss_ours / rss_pi:.2f}**" if rss_pi and rss_ours is not None else "–"
            lines.append(f"| | peak RSS after open ÷ file size | {ratio} | | | "
                         f"{rss_pi if rss_pi is not None else '–'}× | {rss_ours if rss_ours is not None else '–'}× | | |")
    if not any("pi" in impls for steps in table.values() for impls in steps.values()):
        lines.append("\nPi was not measured (run `python -m bench --peer pi`; needs node ≥ 20 and the npm registry).")
    return "\n".join(lines)
