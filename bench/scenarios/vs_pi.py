"""compactd beside the real Pi on the same files in the same run (`python -m bench --peer pi`).

For every file: open, context and prepare compaction — Pi's `SessionManager.open`,
`buildSessionContext` and `prepareCompaction` (run by `bench/peer/pi/measure.mjs`), compactd in
process (`Session.open`, `context_report`, `prepare_report`, run by `bench/measure_compactd.py`;
each in a fresh process per file) and through the daemon
(`session/open`, `session/context`, `session/prepareCompaction` over stdio). "prepare" is like
for like: Pi's preparation plus the serialized conversation its summarizer is sent, against
compactd's answer, which carries that text (`conversationText`, `turnPrefixText`). "prepare, no
text" compares the two preparations alone. The daemon's "context" and "prepare" asked again are
answered from what it stored: their rows say so ("asked again (stored answer)") and count for no
target. What an editor user waits for has rows of its own, every step computed (SEQUENCES): the
first view (open → context → dry run with text) and after a message (append → tokenStats → dry
run at the new leaf), through the daemon beside Pi doing the same in process.

Files: the real Pi fixtures, and generated sessions of 20k and 100k entries (smoke: 2k), each once
with compactions and once as one long uncompacted path. Each file is measured on a copy: Pi
rewrites v1/v2 files as v3 when it opens them, so Pi opens the copy first and both then read the
same bytes. Without `--peer pi` (or without node/npm/registry) only compactd is measured.
"""

from __future__ import annotations

import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson

from compactd.session import Session

from bench import Case, Context, scenario
from bench.harness import REPO_ROOT
from bench.lsp import Daemon
from bench.measure_compactd import samples
from bench.peers import ensure_pi, pi_version, run_pi

FIXTURE_NAMES = (
    ("real fixture", "pi-before-compaction.v1.jsonl"),
    ("pi-mono large session", "real-pi/pi-mono-large-session.jsonl"),
    ("pi-mono compact.jsonl", "real-pi/pi-mono-root-compact.jsonl"),
    ("pi-mono session.jsonl", "real-pi/pi-mono-root-session.jsonl"),
    ("prompt-cache replay", "real-pi/prompt-cache-replay-session.jsonl"),
)
FIXTURE_DIRS = (REPO_ROOT / "tests" / "fixtures",)

_peer_status: dict[str, str | None] = {}


def peer_skip_reason(ctx: Context) -> str | None:
    """None when the Pi peer runs, else why not (asked once per run)."""
    if ctx.peer != "pi":
        return "not requested (use --peer pi)"
    if "pi" not in _peer_status:
        _peer_status["pi"] = ensure_pi()
        if _peer_status["pi"] is not None:
            print(f"peer pi skipped: {_peer_status['pi']}", file=sys.stderr, flush=True)
    return _peer_status["pi"]


def _files(ctx: Context) -> list[tuple[str, Path]]:
    out: list[tuple[str, Path]] = []
    for label, name in FIXTURE_NAMES:
        found = next((d / name for d in FIXTURE_DIRS if (d / name).exists()), None)
        if found is not None:
            out.append((label, found))
    counts = (2_000,) if ctx.smoke else (20_000, 100_000)
    for n in counts:
        out.append((f"{n // 1000}k entries, compacted", ctx.entries_session(n)))
        out.append((f"{n // 1000}k entries, uncompacted", ctx.entries_session(n, compactions=False)))
    return out


def _copy(ctx: Context, source: Path) -> Path:
    """A writable copy keyed by the source's size and mtime (reused by the peak-RSS child)."""
    stat = source.stat()
    folder = ctx.data_dir / "vs-pi"
    folder.mkdir(parents=True, exist_ok=True)
    dest = folder / f"{source.stem}-{stat.st_size}-{stat.st_mtime_ns}.jsonl"
    if not dest.exists():
        tmp = dest.with_suffix(".tmp")
        shutil.copyfile(source, tmp)
        tmp.chmod(0o644)
        tmp.replace(dest)
    return dest


def run_compactd(path: Path, repeats: int, timeout: float = 1800) -> dict[str, list[float]]:
    """compactd's in-process timings on `path`, in a fresh interpreter (bench/measure_compactd.py)."""
    cmd = [sys.executable, "-m", "bench.measure_compactd", str(path), str(repeats)]
    proc = subprocess.run(cmd, cwd=REPO_ROOT, capture_output=True, text=True, timeout=timeout, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"compactd measurement failed on {path.name}:\n{proc.stderr[-2000:]}")
    return dict(json.loads(proc.stdout.strip().splitlines()[-1]))


# Sub-millisecond steps of one process swing up to ~1.7x with the VM's moments, which last
# minutes (both sides alike), and so do the 20k-entry files' steps (compactd's in-process dry run
# there measured 76 ms in one run and 132 ms in the next, one process each): on files below these
# sizes each side runs in that many fresh processes, in rounds (Pi, compactd, daemon, then again),
# so every side meets the same moments, and, per step, the process with the lowest median counts
# (the same rule for every side). The 100k-entry files (over 100 MB) run once per side.
BEST_OF = ((10_000_000, 5), (30_000_000, 3))


def processes_for(size: int) -> int:
    """How many fresh processes per side measure a file of `size` bytes."""
    return next((count for below, count in BEST_OF if size < below), 1)


def best_of(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Per timed step (a list of samples), the samples of the run with the lowest median; other
    fields from the first run."""
    out = dict(runs[0])
    for key, value in runs[0].items():
        if isinstance(value, list) and value and all(isinstance(v, (int, float)) for v in value):
            out[key] = min((run[key] for run in runs), key=statistics.median)
    return out


def _until(fn: Callable[[], object], repeats: int) -> list[float]:
    """Seconds per run, by the rule both measurement scripts follow (`measure_compactd.samples`)."""
    return [ms / 1000 for ms in samples(fn, repeats)]


# The step whose sample is two dry runs (at the leaf, then at its parent), halved: the leaf's may
# be empty and its parent's not (as Pi's, measure.mjs).
PAIRED_STEP = "prepare at a new leaf"


def _daemon_samples(path: Path, repeats: int) -> dict[str, list[float]]:
    """session/open (then close), session/context, session/prepareCompaction through a real daemon;
    then, under "floor <step>", the same answers given by bench/stdio_floor.py (no work at all)."""
    out: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory(prefix="compactd-bench-") as tmp:
        agent = Path(tmp) / "agent"
        agent.mkdir()
        bodies: dict[str, list[bytes]] = {}
        with Daemon(env={"PI_CODING_AGENT_DIR": str(agent)}, cwd=Path(tmp)) as daemon:
            # Automatic compaction off: opening a full session must not write to it.
            daemon.initialize({"settings": {"compaction": {"enabled": False}}})
            daemon.settle(Path(tmp))

            def open_close() -> None:
                sid = daemon.call("session/open", {"path": str(path)}, timeout=600)["sessionId"]
                daemon.call("session/close", {"sessionId": sid})

            out["open"] = _until(open_close, repeats)
            opened = daemon.call_body("session/open", {"path": str(path)}, timeout=600)
            sid = orjson.loads(opened)["result"]["sessionId"]
            bodies["open"] = [opened, daemon.call_body("session/close", {"sessionId": sid})]
            sid = daemon.call("session/open", {"path": str(path)}, timeout=600)["sessionId"]
            out["context"] = _until(lambda: daemon.call("session/context", {"sessionId": sid}), repeats)
            out["prepare"] = _until(lambda: daemon.call("session/prepareCompaction", {"sessionId": sid}), repeats)
            # The daemon keeps its latest dry-run answer: asked at the leaf and then at its parent,
            # every answer is computed (what a panel gets after each append; see PAIRED_STEP).
            leaf = daemon.call("session/context", {"sessionId": sid})["leafId"]
            entry = daemon.call("session/entry", {"sessionId": sid, "entryId": leaf})["entry"] if leaf else {}
            parent = entry.get("parentId")
            other = {"leafId": parent} if parent else {"keepRecentTokens": 20001}  # (a lone entry: other parameters)
            two_asks = [{"sessionId": sid, "leafId": leaf}, {"sessionId": sid, **other}]
            out[PAIRED_STEP] = [seconds / len(two_asks) for seconds in _until(
                lambda: [daemon.call("session/prepareCompaction", ask) for ask in two_asks], repeats)]
            daemon.call("session/close", {"sessionId": sid})
            # The two sequences an editor user waits for (see SEQUENCES), each step computed.
            out.update(_sequences(daemon, path, Path(tmp), repeats))
            sid = daemon.call("session/open", {"path": str(path)}, timeout=600)["sessionId"]
            bodies["context"] = [daemon.call_body("session/context", {"sessionId": sid})]
            bodies["prepare"] = [daemon.call_body("session/prepareCompaction", {"sessionId": sid})]
            bodies[PAIRED_STEP] = [daemon.call_body("session/prepareCompaction", ask) for ask in two_asks]
        out.update(_floor_samples(Path(tmp), bodies, repeats))
    return out


def _sequence(run: Callable[[], Any], tidy: Callable[[Any], object], repeats: int,
              min_seconds: float = 0.3) -> list[float]:
    """Seconds per `run`, by the rule of `measure_compactd.samples`; `tidy(result)` runs after
    each, untimed (closing what the run opened)."""
    tidy(run())
    out: list[float] = []
    while len(out) < repeats or (sum(out) < min_seconds and len(out) < 10 * repeats):
        t0 = time.perf_counter()
        value = run()
        out.append(time.perf_counter() - t0)
        tidy(value)
    return out


# What an editor user waits for, through the daemon, each step computed (no stored answer):
#   first view       session/open of a file not open before, session/context, then the dry run
#                    with its text (session/prepareCompaction) — measure.mjs's firstView;
#   after a message  session/append of a user message, session/tokenStats, then the dry run with
#                    its text at the new leaf — measure.mjs's afterMessage, on a copy (both write
#                    the appended entries); "tokenStats after an append" is its middle step.
SEQUENCES = ("first view", "after a message", "tokenStats after an append")


def _sequences(daemon: Daemon, path: Path, tmp: Path, repeats: int) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {}

    def first_view() -> str:
        sid = daemon.call("session/open", {"path": str(path)}, timeout=600)["sessionId"]
        daemon.call("session/context", {"sessionId": sid}, timeout=600)
        daemon.call("session/prepareCompaction", {"sessionId": sid}, timeout=600)
        return str(sid)

    out["first view"] = _sequence(first_view, lambda sid: daemon.call("session/close", {"sessionId": sid}), repeats)
    copy = tmp / "appended.jsonl"
    shutil.copyfile(path, copy)
    sid = daemon.call("session/open", {"path": str(copy)}, timeout=600)["sessionId"]
    # The session's first view, untimed: the first tokenStats counts every message exactly.
    daemon.call("session/tokenStats", {"sessionId": sid}, timeout=600)
    daemon.call("session/prepareCompaction", {"sessionId": sid}, timeout=600)
    stats: list[float] = []
    turn = [0]

    def after_message() -> None:
        turn[0] += 1
        message = {"role": "user", "content": [{"type": "text", "text": f"next step {turn[0]}"}],
                   "timestamp": 1_760_000_000_000 + turn[0]}
        daemon.call("session/append", {"sessionId": sid, "entries": [{"type": "message", "message": message}]})
        t0 = time.perf_counter()
        daemon.call("session/tokenStats", {"sessionId": sid}, timeout=600)
        stats.append(time.perf_counter() - t0)
        daemon.call("session/prepareCompaction", {"sessionId": sid}, timeout=600)

    out["after a message"] = _sequence(after_message, lambda _: None, repeats)
    out["tokenStats after an append"] = stats[1:]  # (the warm-up's left out)
    daemon.call("session/close", {"sessionId": sid})
    return out


def _floor_samples(tmp: Path, bodies: dict[str, list[bytes]], repeats: int) -> dict[str, list[float]]:
    """Each step's requests answered with the daemon's own answers by bench/stdio_floor.py: the
    part of the daemon's time any daemon speaking JSON over stdio to this client pays."""
    files: list[str] = []
    indexes: dict[str, list[int]] = {}
    for step, answers in bodies.items():
        indexes[step] = []
        for answer in answers:
            file = tmp / f"answer-{len(files)}.json"
            file.write_bytes(answer)
            indexes[step].append(len(files))
            files.append(str(file))
    out: dict[str, list[float]] = {}
    with Daemon(command=[sys.executable, "-m", "bench.stdio_floor", *files], cwd=REPO_ROOT) as floor:
        for step, numbers in indexes.items():
            # Per sample, the step's answers in order, as the daemon's step asks for them (open:
            # open and close; PAIRED_STEP: leaf and parent, halved like the daemon's).
            def ask(numbers: list[int] = numbers) -> None:
                for number in numbers:
                    floor.call("floor/answer", {"index": number})

            share = len(numbers) if step == PAIRED_STEP else 1
            out[f"floor {step}"] = [seconds / share for seconds in _until(ask, repeats)]
    return out


# The daemon's steps whose answer, asked again, is the one it stored: their rows' names.
REPEATED = {"context": "context, asked again (stored answer)", "prepare": "prepare, asked again (stored answer)"}


def _tag(label: str, step: str, impl: str, **more: Any) -> dict[str, Any]:
    return {"vs": {"file": label, "step": step, "impl": impl}, **more}


@scenario("vs_pi", description="compactd beside the real Pi: open, context, prepare (ms); --peer pi runs Pi")
def vs_pi(ctx: Context) -> Iterator[Case]:
    skip = peer_skip_reason(ctx)
    with_pi = skip is None
    for label, source in _files(ctx):
        path = _copy(ctx, source)
        size = source.stat().st_size
        big = size > 100_000_000
        repeats = 3 if big else ctx.repeats
        processes = 1 if ctx.smoke else processes_for(size)
        state: dict[str, Any] = {}

        def measured(side: str, path: Path = path, repeats: int = repeats, state: dict[str, Any] = state,
                     processes: int = processes, with_pi: bool = with_pi) -> dict[str, Any]:
            """Every side's timings of this file, measured in rounds on first use."""
            if not state:
                sides: dict[str, Callable[[], dict[str, Any]]] = {
                    "ours": lambda: run_compactd(path, repeats), "daemon": lambda: _daemon_samples(path, repeats)}
                if with_pi:
                    sides = {"pi": lambda: run_pi(path, repeats), **sides}
                runs: dict[str, list[dict[str, Any]]] = {name: [] for name in sides}
                for _ in range(processes):
                    for name, run in sides.items():
                        runs[name].append(run())
                state.update({name: best_of(results) for name, results in runs.items()})
            return state[side]

        def pi(key: str, measured: Callable[[str], dict[str, Any]] = measured) -> list[float]:
            return [ms / 1000 for ms in measured("pi")[key]]

        def daemon(key: str, measured: Callable[[str], dict[str, Any]] = measured) -> list[float]:
            return measured("daemon")[key]

        def ours(key: str, measured: Callable[[str], dict[str, Any]] = measured) -> list[float]:
            return [ms / 1000 for ms in measured("ours")[key]]

        def pi_rss(result: dict[str, Any], state: dict[str, Any] = state, size: int = size) -> None:
            data = state["pi"]
            result["derived"].update({
                "Δrss/size": round((data["peakRssKb"] - data["baselineRssKb"]) * 1024 / size, 2),
                "entries": data["entries"]})

        def our_rss(result: dict[str, Any], size: int = size) -> None:
            if "peak_rss_mb" in result:
                result.setdefault("derived", {})["Δrss/size"] = round(
                    (result["peak_rss_mb"] - result["baseline_rss_mb"]) * 2**20 / size, 2)

        note = {"bytes": size, "file": source.name}
        # Pi first: its first open migrates a v1/v2 copy, so both then read the same v3 bytes.
        if with_pi:
            extra = {**note, "pi": pi_version()}
            yield Case(f"pi open {label}", lambda f=pi: f("open"), unit="ms", sampled=True,
                       extra=_tag(label, "open", "pi", **extra), after=pi_rss)
            yield Case(f"pi context {label}", lambda f=pi: f("context"), unit="ms", sampled=True,
                       extra=_tag(label, "context", "pi", **extra))
            yield Case(f"pi prepare {label}", lambda f=pi: f("prepareText"), unit="ms", sampled=True,
                       extra=_tag(label, "prepare", "pi", **extra))
            yield Case(f"pi prepare, no text {label}", lambda f=pi: f("prepare"), unit="ms", sampled=True,
                       extra=_tag(label, "prepare, no text", "pi", **extra))
            yield Case(f"pi prepare at a new leaf {label}", lambda f=pi: f("prepareTextNewLeaf"), unit="ms",
                       sampled=True, extra=_tag(label, "prepare at a new leaf", "pi", **extra))
        # In a fresh process per file, as Pi's measure.mjs runs (bench/measure_compactd.py).
        yield Case(f"compactd open {label}", lambda f=ours: f("open"), unit="ms", sampled=True,
                   extra=_tag(label, "open", "compactd", **note))
        yield Case(f"compactd open RSS {label}", lambda p=path: Session.open(p), unit="ms", peak_rss=True,
                   max_repeats=1, extra=_tag(label, "rss", "compactd", **note), after=our_rss)
        yield Case(f"compactd context {label}", lambda f=ours: f("context"), unit="ms", sampled=True,
                   extra=_tag(label, "context", "compactd", **note))
        yield Case(f"compactd prepare {label}", lambda f=ours: f("prepare"), unit="ms", sampled=True,
                   extra=_tag(label, "prepare", "compactd", **note))
        yield Case(f"compactd prepare, no text {label}", lambda f=ours: f("prepareNoText"), unit="ms",
                   sampled=True, extra=_tag(label, "prepare, no text", "compactd", **note))
        if with_pi:
            for step, key in (("first view", "firstView"), ("after a message", "afterMessage"),
                              ("tokenStats after an append", "tokenStatsAfterAppend")):
                yield Case(f"pi {step} {label}", lambda f=pi, k=key: f(k), unit="ms", sampled=True,
                           extra=_tag(label, step, "pi", **extra))
        # The daemon's "context" and "prepare" asked again are answered from what it stored: rows of
        # their own (REPEATED), never compared with a cold step.
        for step in ("open", "context", "prepare", "prepare at a new leaf", *SEQUENCES):
            yield Case(f"daemon {step} {label}", lambda f=daemon, k=step: f(k), unit="ms", sampled=True,
                       extra=_tag(label, REPEATED.get(step, step), "daemon", **note))
        for step in ("open", "context", "prepare", "prepare at a new leaf"):
            yield Case(f"stdio floor {step} {label}", lambda f=daemon, k=step: f(f"floor {k}"), unit="ms",
                       sampled=True, extra=_tag(label, REPEATED.get(step, step), "floor", **note))
