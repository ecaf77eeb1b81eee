"""What came back from a command: test counts and failing test names, or the values it printed."""

from __future__ import annotations

import re

from .text import clip

# Test-runner tallies: pytest ("3 failed, 10 passed"), jest/vitest ("Tests: 1 failed, 12 passed"),
# cargo ("test result: ok. 12 passed; 0 failed"), unittest ("Ran 12 tests" / "OK" / "FAILED (failures=2)").
_COUNT = re.compile(r"\b(\d+) (passed|failed|errors?|skipped|xfailed|todo)\b")
_UNITTEST = re.compile(r"^Ran (\d+) tests? in", re.MULTILINE)
# Names of failing tests: pytest "FAILED path::name", go "--- FAIL: Name", cargo "test name ... FAILED",
# jest "✕ name" / "● Suite › name".
_FAILING = re.compile(
    r"^(?:FAILED\s+(\S+::\S+)(?:\s+-\s.*)?|--- FAIL: (\S+)|test (\S+) \.\.\. FAILED|\s*[✕×] (.+?)(?: \(\d+ ?ms\))?|● (.+))"
    r"(?:\s+\([\d.]+\s?m?s\))?\s*$",
    re.MULTILINE,
)
# Node's built-in runner (`node --test`): one count a line, "ℹ pass 9" (spec reporter) or "# fail 1" (TAP).
_NODE = re.compile(r"^[ℹ#] (pass|fail|skipped|todo|cancelled) (\d+)\s*$", re.MULTILINE)
_NODE_AS = {"pass": "passed", "fail": "failed"}
# Go package results: "ok  \tpkg\t0.01s" and "FAIL\tpkg".
_GO_PKG = re.compile(r"^(ok|FAIL)\s+(\S+)\s+[\d.]+s", re.MULTILINE)


def run_tally(output: str) -> str:
    """'12 passed, 1 failed (failing: test_x)' for a test run's output, '' when it shows no tally."""
    counts: dict[str, int] = {}
    for n, what in _COUNT.findall(output[-3000:]):
        key = "errors" if what.startswith("error") else what
        counts[key] = max(counts.get(key, 0), int(n))
    if not counts:  # zero counts of node's runner say nothing; a pass count of 0 still does
        counts = {_NODE_AS.get(what, what): int(n) for what, n in _NODE.findall(output[-3000:])
                  if int(n) or what == "pass"}
    m = _UNITTEST.search(output)
    if m and not counts:
        counts["ran"] = int(m.group(1))
    go = _GO_PKG.findall(output)
    if go and not counts:
        ok = sum(1 for r, _ in go if r == "ok")
        if ok:
            counts["packages ok"] = ok
        if len(go) > ok:
            counts["packages failed"] = len(go) - ok
    failing = []
    for m in _FAILING.finditer(output):
        name = next(g for g in m.groups() if g)
        if name not in failing:
            failing.append(name)
    if not counts and not failing:
        return ""
    tally = ", ".join(f"{n} {k}" for k, n in counts.items())
    if failing:
        shown = ", ".join(failing[:5]) + (f" (+{len(failing) - 5})" if len(failing) > 5 else "")
        tally = (tally + "; " if tally else "") + "failing: " + shown
    return tally


def printed_values(output: str, max_lines: int = 4) -> str:
    """A short output in one line (what a script or query printed); '' for long or empty output."""
    lines = [ln.rstrip() for ln in output.strip().splitlines() if ln.strip()
             and not ln.startswith("Command exited with code")]
    while len(lines) > 1 and lines[0].startswith("> "):  # npm/yarn/pnpm echo the script they run ("> build")
        lines.pop(0)
    if not lines or len(lines) > max_lines or sum(len(ln) for ln in lines) > 300:
        return ""
    return clip(" | ".join(ln.strip() for ln in lines), 300)


_LS_LONG = re.compile(r"^[-dlcbps][rwxsStT-]{9}[@+.]?\s+\d+\s+\S+\s+\S+\s+[\d,]+\s+\w{3}\s+\d+\s+[\d:]+\s+")


def listing(output: str, max_items: int = 20) -> str:
    """A listing the user asked for, as a compact list of its first lines."""
    lines = [ln.strip() for ln in output.strip().splitlines() if ln.strip() and not re.match(r"total \d+$", ln.strip())]
    lines = [_LS_LONG.sub("", ln) for ln in lines]  # `ls -l`: the names, not the modes and dates
    lines = [ln for ln in lines if ln not in (".", "..")]
    if not lines:
        return ""
    shown = ", ".join(clip(ln, 60) for ln in lines[:max_items])
    return shown + (f" (+{len(lines) - max_items} more)" if len(lines) > max_items else "")
