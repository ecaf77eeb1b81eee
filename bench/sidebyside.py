"""The side-by-side table of `python -m bench --peer pi`: compactd ÷ Pi per file and step, from the
result rows of the `vs_pi` scenario (their `extra.vs` tags). Markdown, so the README's
Performance section can be regenerated from a run."""

from __future__ import annotations

from typing import Any

STEPS = ("open", "context", "prepare", "prepare, no text", "first view", "after a message",
         "tokenStats after an append", "prepare at a new leaf", "context, asked again (stored answer)",
         "prepare, asked again (stored answer)")
# Steps only the daemon has: compactd in process has no column, and Pi's figure is its own run of
# the step named here (results from before Pi measured "prepare at a new leaf": its prepare). The
# rows "asked again" are the daemon's stored answer to a repeated request beside Pi computing it:
# shown, never counted for a target (`goals`).
_BASELINE = {"prepare at a new leaf": "prepare", "context, asked again (stored answer)": "context",
             "prepare, asked again (stored answer)": "prepare"}
_DAEMON_ONLY = {"prepare at a new leaf", "first view", "after a message", "tokenStats after an append",
                *_BASELINE}
MB = 1_000_000


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
            pi = (impls.get("pi") or base.get("pi") or {}).get("median")
            ours = base.get("compactd", {}).get("median") if step not in _DAEMON_ONLY else None
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


def _ratios(table: dict[str, dict[str, dict[str, dict[str, Any]]]], step: str, impl: str) -> list[tuple[str, float]]:
    """(file, `impl`'s median ÷ Pi's) for `step` on every file of 1 MB or more measured by both."""
    out = []
    for file, steps in table.items():
        impls = steps.get(step, {})
        size = next((r["extra"].get("bytes") or 0 for s in steps.values() for r in s.values()), 0)
        ours, pi = impls.get(impl, {}).get("median"), impls.get("pi", {}).get("median")
        if size >= MB and ours is not None and pi:
            out.append((file, ours / pi))
    return out


def _verdict(values: list[tuple[str, float]], limit: float, unit: str = "×") -> tuple[str, str]:
    """(the range, with the files over `limit` named; "met" / "**not met**")."""
    if not values:
        return "not measured", "–"
    over = [f"{file} {value:.2f}{unit}" for file, value in values if value > limit]
    low, high = min(v for _, v in values), max(v for _, v in values)
    text = f"{low:.2f}–{high:.2f}{unit} on {len(values)} files"
    if over:
        text += "; over: " + ", ".join(over)
    return text, "**not met**" if over else "met"


def goals(rows: list[dict[str, Any]]) -> list[tuple[str, str, str]]:
    """The side-by-side targets (issue 29) judged from this run's rows: (target, result, verdict).
    Files of 1 MB or more; medians; the daemon's repeated answers never count."""
    table = collect(rows)
    if not any("pi" in impls for steps in table.values() for impls in steps.values()):
        return []
    stats = []
    for file, steps in table.items():
        row = steps.get("tokenStats after an append", {}).get("daemon")
        if row is not None:  # (this target holds on every file, small ones too)
            stats.append((file, row["median"]))
    out = []
    for target, step, impl, limit in (
        ("first view (open → context → dry run with text), daemon ≤ 0.5 × Pi in process", "first view", "daemon", 0.5),
        ("after a message (append → tokenStats → dry run at the new leaf), daemon ≤ 0.5 × Pi", "after a message",
         "daemon", 0.5),
        ("context in process, cold, ≤ 1.0 × Pi", "context", "compactd", 1.0),
        ("prepare with text in process, cold, ≤ 1.0 × Pi", "prepare", "compactd", 1.0),
    ):
        out.append((target, *_verdict(_ratios(table, step, impl), limit)))
    out.append(("`session/tokenStats` after an append ≤ 2 ms on every file", *_verdict(stats, 2.0, " ms")))
    return out
