"""Benchmark registry, timing, peak-RSS measurement and cached inputs."""

from __future__ import annotations

import hashlib
import json
import math
import os
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
FIXTURE = REPO_ROOT / "tests" / "fixtures" / "pi-before-compaction.v1.jsonl"
DEFAULT_DATA_DIR = REPO_ROOT / "bench" / "data"
DEFAULT_JSON = REPO_ROOT / "bench" / "out" / "results.json"

# label -> target bytes of generated inputs
SIZES: tuple[tuple[str, int], ...] = (
    ("1MB", 1_000_000), ("10MB", 10_000_000), ("50MB", 50_000_000), ("200MB", 200_000_000),
)
SMOKE_SIZES: tuple[tuple[str, int], ...] = (("100KB", 100_000),)
DATA_SEED = 1


@dataclass
class Case:
    """One measured thing. `fn` is timed; `setup` runs untimed before every repetition."""

    label: str
    fn: Callable[[], object]
    unit: str = "MB/s"  # "MB/s" and "ops/s" are rates (work / seconds); "s" and "ms" are durations
    work: float = 1.0  # megabytes (MB/s) or operations (ops/s) processed by one call of fn
    setup: Callable[[], None] | None = None
    peak_rss: bool = False
    max_repeats: int | None = None  # cap repetitions for very slow cases
    repeats: int | None = None  # fixed repetitions for fast, noisy cases (overrides --repeat)
    extra: dict[str, Any] = field(default_factory=dict)
    # True: `fn` is called once and returns its own samples (seconds per operation), e.g. the
    # latencies of many requests; the result then also carries p99.
    sampled: bool = False
    # Called with the finished result row: lets a scenario derive ratios from earlier cases.
    after: Callable[[dict[str, Any]], None] | None = None


@dataclass
class Scenario:
    name: str
    func: Callable[[Context], Iterable[Case]]
    description: str = ""


SCENARIOS: dict[str, Scenario] = {}


def scenario(name: str, *, description: str = "") -> Callable[[Callable[[Context], Iterable[Case]]], Callable[[Context], Iterable[Case]]]:
    """Register a function `f(ctx) -> Iterable[Case]` under `name`."""

    def register(func: Callable[[Context], Iterable[Case]]) -> Callable[[Context], Iterable[Case]]:
        if name in SCENARIOS:
            raise ValueError(f"duplicate benchmark scenario {name!r}")
        SCENARIOS[name] = Scenario(name, func, description or (func.__doc__ or "").strip().split("\n")[0])
        return func

    return register


def _generator_stamp() -> str:
    """Hash of the generator sources: cached inputs are regenerated when the generator changes."""
    from compactd import samples

    h = hashlib.sha1()
    for p in sorted(Path(samples.__file__).parent.glob("*.py")):
        h.update(p.read_bytes())
    return h.hexdigest()[:10]


@dataclass
class Context:
    smoke: bool = False
    repeats: int = 5
    data_dir: Path = DEFAULT_DATA_DIR
    stamp: str | None = None  # generator version in cached file names; computed on first use
    peer: str | None = None  # "pi": measure the real Pi beside compactd (`--peer pi`)
    split: str | None = None  # "dev" / "heldout": one side of bench/quality/split.json (`--split`)

    def sizes(self) -> tuple[tuple[str, int], ...]:
        return SMOKE_SIZES if self.smoke else SIZES

    def session_file(self, target_bytes: int, *, seed: int = DATA_SEED) -> Path:
        """A generated session of about `target_bytes`, cached under the data dir."""
        from compactd.samples import write_session

        if self.stamp is None:
            self.stamp = _generator_stamp()
        path = self.data_dir / f"session-{target_bytes}-s{seed}-{self.stamp}.jsonl"
        if not path.exists():
            self.data_dir.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(".tmp")
            write_session(tmp, seed=seed, target_bytes=target_bytes)
            tmp.replace(path)
        return path

    def entries_session(self, entries: int, *, seed: int = DATA_SEED, compactions: bool = True) -> Path:
        """A generated session of exactly `entries` entries (plus the header), cached: a long
        working session with tool outputs capped at 1,500 characters (~1.1 KB per entry).
        `compactions=False`: one long uncompacted path (what a 1M-token model produces)."""
        import itertools

        from compactd.samples.generate import _generate, _Knobs

        if self.stamp is None:
            self.stamp = _generator_stamp()
        kind = "" if compactions else "-uncompacted"
        path = self.data_dir / f"entries-{entries}{kind}-s{seed}-{self.stamp}.jsonl"
        if not path.exists():
            self.data_dir.mkdir(parents=True, exist_ok=True)
            lines = _generate(knobs=_Knobs(result_cap=1500), seed=seed, target_bytes=None, turns=10**9,
                              branches=True, compactions=compactions, split_turns=True, cwd="/home/dev/project",
                              session_id=None)
            tmp = path.with_suffix(".tmp")
            with tmp.open("w", encoding="utf-8", newline="\n") as fh:
                for line in itertools.islice(lines, entries + 1):
                    fh.write(line + "\n")
            tmp.replace(path)
        return path

    def entry_count(self) -> int:
        """The long session's size in entries: 100,000 (smoke: 2,000)."""
        return 2_000 if self.smoke else 100_000

    def fixture(self) -> Path | None:
        return FIXTURE if FIXTURE.exists() else None

    def inputs(self, *, fixture: bool = True) -> Iterator[tuple[str, Path]]:
        """(label, path) of every generated size, then the real Pi fixture if present."""
        for label, size in self.sizes():
            yield label, self.session_file(size)
        fx = self.fixture() if fixture else None
        if fx is not None:
            yield "fixture", fx

    @staticmethod
    def megabytes(path: Path) -> float:
        return path.stat().st_size / 1e6


# ------------------------------------------------------------------------------------- measuring


def time_case(case: Case, repeats: int) -> list[float]:
    """Seconds per call of `case.fn`, one value per repetition."""
    n = max(1, min(repeats, case.max_repeats or repeats))
    out: list[float] = []
    warmed = False
    while len(out) < n:
        if case.setup:
            case.setup()
        t0 = time.perf_counter()
        case.fn()
        dt = time.perf_counter() - t0
        if not warmed and dt < 0.1:
            warmed = True  # a fast first run mostly measures cold caches: discard it once
            continue
        warmed = True
        out.append(dt)
    return out


def to_unit(case: Case, seconds: float) -> float:
    if case.unit in ("MB/s", "ops/s"):
        return case.work / max(seconds, 1e-9)  # never inf: the JSON output must stay strict
    if case.unit == "ms":
        return seconds * 1000
    return seconds


def vm_hwm_kb() -> int:
    """Peak resident set size of this process in KiB (VmHWM; ru_maxrss where /proc is missing)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        pass
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return rss // 1024 if sys.platform == "darwin" else rss  # macOS reports bytes


def child_main(name: str, label: str, smoke: bool, data_dir: Path, stamp: str | None = None) -> int:
    """In the child: rebuild the scenario's cases, run the chosen one once, print peak RSS as JSON."""
    load_scenarios()
    ctx = Context(smoke=smoke, repeats=1, data_dir=data_dir, stamp=stamp)
    case = next((c for c in SCENARIOS[name].func(ctx) if c.label == label), None)
    if case is None:
        print(json.dumps({"error": f"no case {label!r} in {name!r}"}))
        return 2
    if case.setup:
        case.setup()
    baseline = vm_hwm_kb()
    case.fn()
    print(json.dumps({"baseline_kb": baseline, "peak_kb": vm_hwm_kb()}))
    return 0


def measure_peak_rss(name: str, case: Case, ctx: Context) -> dict[str, float]:
    """Run one case in a fresh interpreter; peak RSS in MiB (and the baseline before the case ran)."""
    cmd = [sys.executable, "-m", "bench", "--child", name, case.label, "--data-dir", str(ctx.data_dir)]
    if ctx.stamp:  # same cached inputs as the parent, even if the generator was edited meanwhile
        cmd += ["--stamp", ctx.stamp]
    if ctx.smoke:
        cmd.append("--smoke")
    proc = subprocess.run(cmd, cwd=REPO_ROOT, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"peak-RSS child for {name}/{case.label} failed:\n{proc.stderr[-2000:]}")
    data = json.loads(proc.stdout.strip().splitlines()[-1])
    return {"peak_rss_mb": round(data["peak_kb"] / 1024, 1), "baseline_rss_mb": round(data["baseline_kb"] / 1024, 1)}


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100)."""
    ordered = sorted(values)
    rank = max(1, min(len(ordered), math.ceil(q / 100 * len(ordered))))
    return ordered[rank - 1]


def run_case(name: str, case: Case, ctx: Context) -> dict[str, Any]:
    if case.sampled:
        if case.setup:
            case.setup()
        seconds = [float(x) for x in case.fn()]  # type: ignore[union-attr]
    else:
        seconds = time_case(case, case.repeats or ctx.repeats)
    values = [to_unit(case, s) for s in seconds]
    result: dict[str, Any] = {
        "scenario": name, "case": case.label, "unit": case.unit,
        "median": statistics.median(values), "min": min(values), "max": max(values),
        "runs": len(values), "samples": values, "seconds": seconds, "work": case.work,
    }
    if case.sampled:
        result["p99"] = percentile(values, 99)
        result["derived"] = {"p50": result["median"], "p99": result["p99"]}
    if case.peak_rss:
        result.update(measure_peak_rss(name, case, ctx))
    if case.extra:
        result["extra"] = case.extra
    if case.after:
        case.after(result)
    return result


def load_scenarios() -> None:
    """Import every module in bench/scenarios so their @scenario decorators run."""
    import importlib
    import pkgutil

    import bench.scenarios as pkg

    for mod in sorted(pkgutil.iter_modules(pkg.__path__), key=lambda m: m.name):
        importlib.import_module(f"bench.scenarios.{mod.name}")


def environment() -> dict[str, Any]:
    import platform

    commit = None
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO_ROOT, capture_output=True,
                                text=True, check=False).stdout.strip() or None
    except OSError:
        pass
    from compactd._native import compiled

    return {"python": platform.python_version(), "implementation": platform.python_implementation(),
            "compiled": compiled(),  # the hot modules built by mypyc (setup.py), or their sources
            "platform": platform.platform(), "cpus": os.cpu_count(), "commit": commit,
            "started": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
