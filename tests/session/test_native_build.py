"""The modules setup.py compiles with mypyc: compiled in this install, the same answers as their
source on real and malformed sessions, and never run when older than their source."""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

import compactd
from compactd import _native

from tests.compaction.builders import Builder, tool_call, tool_result_msg

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures"
PROBE = Path(__file__).with_name("native_probe.py")
PACKAGE = Path(compactd.__file__).parent

# Values a hand-edited or foreign file may hold where the code expects something else.
ODD_VALUES: list[Any] = [None, 0, -1, 1.5, 2.0, True, False, "", "x", "0", [], {}, [1, "a", None],
                         {"type": "text"}, {"0": 1}, 10**20]


def _require_compiled() -> None:
    if not _native.compiled():
        pytest.fail("compactd runs interpreted here: `pip install -e .` compiles it (needs a C compiler; "
                    "COMPACTD_PURE=1 must not be set)")


def _probe(files: list[Path], *, pure: bool, pythonpath: Path | None = None) -> list[Any]:
    env = {k: v for k, v in os.environ.items() if k != "COMPACTD_PURE"}
    if pure:
        env["COMPACTD_PURE"] = "1"
    if pythonpath is not None:
        env["PYTHONPATH"] = str(pythonpath)
    proc = subprocess.run([sys.executable, str(PROBE), *map(str, files)], env=env, cwd=ROOT,
                          capture_output=True, timeout=600, check=True)
    return [json.loads(line) for line in proc.stdout.splitlines()]


def _mutate(value: Any, rng: random.Random) -> Any:
    """`value` with one nested field replaced by an odd value, or deleted."""
    if isinstance(value, dict) and value:
        key = rng.choice(sorted(value))
        out = dict(value)
        roll = rng.random()
        if roll < 0.15:
            del out[key]
        elif roll < 0.5 or not isinstance(value[key], (dict, list)) or not value[key]:
            out[key] = rng.choice(ODD_VALUES)
        else:
            out[key] = _mutate(value[key], rng)
        return out
    if isinstance(value, list) and value:
        index = rng.randrange(len(value))
        out_list = list(value)
        out_list[index] = _mutate(value[index], rng) if rng.random() < 0.6 else rng.choice(ODD_VALUES)
        return out_list
    return rng.choice(ODD_VALUES)


def _every_kind() -> list[dict[str, Any]]:
    """A header and one entry of every type and message role the views project."""
    b = Builder()
    b.model_change()
    b.thinking("low")
    b.message({"role": "system", "content": "be brief", "sections": {"a": "x"}, "toolsAdded": [{"name": "t"}]})
    first = b.user("start")
    calls = [tool_call("c1", "read", {"path": "a.py"}), tool_call("c2", "edit", {"path": "b.py"}),
             tool_call("c3", "write", {"path": "c.py"}), tool_call("c4", "bash", {"command": "ls"})]
    b.assistant("reading", thinking="hmm", calls=calls)
    b.tool_result("c1", "read", "text")
    b.message({**tool_result_msg("c2", "edit", "long output"), "prunedAt": 1})
    b.bash("ls", "a.txt")
    b.bash("secret", "x", excludeFromContext=True)
    b.message({"role": "developer", "content": "dev note"})
    b.message({"role": "assistant", "content": None})
    b.message({"role": "compactionSummary", "summary": "earlier", "timestamp": 1})
    b.message({"role": "branchSummary", "summary": "elsewhere", "timestamp": 1})
    b.message({"role": "hookMessage", "content": "hook", "timestamp": 1})
    b.message({"role": "custom", "content": [{"type": "text", "text": "c"}, {"type": "image"}], "timestamp": 1})
    b.message({"role": "mystery", "content": "dropped"})
    kept = b.user("kept")
    b.assistant("more", calls=[tool_call("c5", "read", {"path": "d.py", "0": 1})])
    b._append("model_change", model="anthropic/claude-x")
    b.compaction(kept, details={"readFiles": ["r.py"], "modifiedFiles": ["m.py"]},
                 systemMessage={"role": "system", "content": "replayed"})
    b.branch_summary("branch work", first, details={"readFiles": ["s.py"]})
    b.custom_message("note")
    b.custom("state", {"k": 1})
    b.label(first)
    b._append("context_edit", targetId=kept, replacement={"content": "edited"})
    b.user("after")
    b.assistant("done")
    header = {"type": "session", "version": 3, "id": "every-kind", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/w"}
    return [header, *b.entries]


def _malformed_sessions(folder: Path, count: int) -> list[Path]:
    """Real entries (the small real file and the start of the real fixture) and one entry of every
    kind, each session with a few fields anywhere replaced by odd values."""
    lines = (FIXTURES / "real-pi" / "prompt-cache-replay-session.jsonl").read_text().splitlines()
    big = (FIXTURES / "pi-before-compaction.v1.jsonl").read_text().splitlines()[:60]
    sources = [[json.loads(x) for x in lines], [json.loads(x) for x in big], _every_kind()]
    rng = random.Random(20261130)
    out: list[Path] = []
    for n in range(count):
        entries = list(sources[n % 3])
        for _ in range(rng.randint(1, 6)):
            index = rng.randrange(1, len(entries))  # the header stays readable
            entries[index] = _mutate(entries[index], rng)
        path = folder / f"odd-{n}.jsonl"
        path.write_text("".join(json.dumps(e) + "\n" for e in entries))
        out.append(path)
    return out


def test_this_install_runs_compiled() -> None:
    _require_compiled()
    from compactd.session import context

    assert Path(context.__file__).suffix != ".py"


def test_compiled_answers_equal_the_source(tmp_path: Path) -> None:
    _require_compiled()
    files = sorted(FIXTURES.rglob("*.jsonl"))
    work = tmp_path / "files"
    work.mkdir()
    copies = []
    for source in files:  # copies: opening a v1 file migrates it in place
        copies.append(work / source.name)
        shutil.copyfile(source, copies[-1])
    every_kind = work / "every-kind.jsonl"
    every_kind.write_text("".join(json.dumps(e) + "\n" for e in _every_kind()))
    copies += [every_kind, *_malformed_sessions(work, 240)]
    pure = _probe(copies, pure=True)
    # The pure run migrated the v1 copies; the compiled run reads the same bytes again.
    native = _probe(copies, pure=False)
    assert pure[0] == {"compiled": False} and native[0] == {"compiled": True}
    assert len(pure) == len(native) == len(copies) + 1
    for path, a, b in zip(copies, pure[1:], native[1:]):
        assert a == b, f"compiled and interpreted answers differ on {path.name}"
    # The malformed files did reach the compiled code's rejections and fallbacks, not only errors.
    assert sum("raised" not in answer for answer in native[1:]) > 200


def _copy_package(dest: Path) -> Path:
    """compactd as installed here, modification times kept (compiled modules stay newer)."""
    shutil.copytree(PACKAGE, dest / "compactd", ignore=shutil.ignore_patterns("__pycache__"))
    return dest


def _run(pythonpath: Path, code: str, **env: str) -> str:
    environ = {k: v for k, v in os.environ.items() if k != "COMPACTD_PURE"} | {"PYTHONPATH": str(pythonpath), **env}
    return subprocess.run([sys.executable, "-c", code], env=environ, capture_output=True, text=True,
                          timeout=120, check=True).stdout.strip()


REPORT = ("import compactd._native as n, compactd.session.context as c, compactd.compaction.prepare as p;"
          "print(n.compiled(), c.__file__.endswith('.py'), p.__file__.endswith('.py'))")


def test_an_edited_source_runs_instead_of_its_older_compiled_module(tmp_path: Path) -> None:
    _require_compiled()
    root = _copy_package(tmp_path)
    assert _run(root, REPORT) == "True False False"
    # An edit to one module after the build: that module and every other one of the group
    # run from source (they call each other inside the shared library).
    source = root / "compactd" / "session" / "context.py"
    later = time.time() + 60  # after the build of every compiled module
    os.utime(source, (later, later))
    assert _run(root, REPORT) == "False True True"
    small = str(FIXTURES / "real-pi" / "prompt-cache-replay-session.jsonl")
    out = _run(root, "from compactd.session import Session; from compactd.session.views import context_report;"
                     f"print(len(context_report(Session.open({small!r}))['messages']))")
    assert int(out) > 0


def test_compactd_pure_runs_the_sources(tmp_path: Path) -> None:
    _require_compiled()
    root = _copy_package(tmp_path)
    assert _run(root, REPORT, COMPACTD_PURE="1") == "False True True"


def test_modules_without_their_shared_library_run_the_sources(tmp_path: Path) -> None:
    """A build stopped half way: compiled modules whose shared library is missing cannot load."""
    _require_compiled()
    root = _copy_package(tmp_path)
    for library in (root / "compactd").glob("native__mypyc*"):
        library.unlink()
    assert _run(root, REPORT) == "False True True"
