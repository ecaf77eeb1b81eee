"""Tool calls and their results (read/edit/write/bash/grep) against a synthetic `Project`.

Each helper returns a `ToolRun`: the call's arguments (what the assistant message carries) and the
result (what the toolResult message carries), computed together so they always agree.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from compactd.samples.project import TEST_CASES, Project

READ_MAX_LINES = 2000
READ_MAX_BYTES = 50 * 1024


@dataclass
class ToolRun:
    name: str
    args: dict[str, Any]
    text: str
    is_error: bool = False
    details: dict[str, Any] | None = None
    error_line: str | None = None  # the exact error, remembered for summaries
    modified: bool = False


def _cap_head(text: str, cap: int | None) -> str:
    if cap is None or len(text) <= cap:
        return text
    cut = text.rfind("\n", 0, max(cap, 80))
    return text[: cut if cut > 0 else cap] + f"\n\n[{len(text) - cap} more characters not shown]"


def _cap_tail(text: str, cap: int | None) -> str:
    if cap is None or len(text) <= cap:
        return text
    start = text.find("\n", len(text) - cap)
    return "[earlier output omitted]\n" + text[start + 1 if start >= 0 else len(text) - cap:]


def _exit(text: str, code: int) -> str:
    return f"{text}\n\nCommand exited with code {code}" if code else text


# ---------------------------------------------------------------------------------------------- read


def read(proj: Project, rng: random.Random, path: str, cwd: str, *, cap: int | None = None) -> ToolRun:
    args: dict[str, Any] = {"path": path}
    if not proj.exists(path):
        msg = f"ENOENT: no such file or directory, access '{cwd}/{path}'"
        return ToolRun("read", args, msg, True, error_line=msg)
    lines = proj.file(path).text.split("\n")
    total = len(lines)
    start = 0
    if total > 300 and rng.random() < 0.3:
        start = rng.randrange(0, total - 100)
        args["offset"] = start + 1
        args["limit"] = rng.choice([80, 120, 200, 400])
        chunk = lines[start: start + args["limit"]]
    else:
        chunk = lines[:READ_MAX_LINES]
    text = "\n".join(chunk)
    if len(text.encode()) > READ_MAX_BYTES:
        text = text.encode()[:READ_MAX_BYTES].decode(errors="ignore")
        text = text[: text.rfind("\n")]
    shown = text.count("\n") + 1
    if start + shown < total and "limit" not in args:
        text += (f"\n\n[Showing lines {start + 1}-{start + shown} of {total}. "
                 f"Use offset={start + shown + 1} to read more.]")
    return ToolRun("read", args, _cap_head(text, cap))


# ---------------------------------------------------------------------------------------------- edit


def edit(proj: Project, rng: random.Random, path: str, func: str, *, fail: bool = False) -> ToolRun:
    src = proj.file(path)
    lines = src.text.split("\n")
    anchor = next((i for i, ln in enumerate(lines) if ln.startswith(f"def {func}(")), None)
    if anchor is None:
        anchor = next((i for i, ln in enumerate(lines) if ln.startswith("def ")), min(5, len(lines) - 1))
    old_lines = lines[anchor: anchor + 2]
    old = "\n".join(old_lines)
    guard_var = rng.choice(["value", "text", "row", "payload", "items"])
    new_body = rng.choice((
        [f"    if {guard_var} is None:", "        return None"],
        [f"    if not {guard_var}:", f"        raise ValueError(\"{guard_var} is empty (line {{lineno}})\")"],
        ["    # normalise once here so every branch below sees the same form",
         f"    {guard_var} = {guard_var}.strip() if isinstance({guard_var}, str) else {guard_var}"],
        [f"    logger.debug(\"{func} called with %d bytes\", len(str({guard_var})))"],
    ))
    new = "\n".join([*old_lines, *new_body])
    if fail:
        bad_old = old.replace("    ", "  ", 1) if "    " in old else old + " "
        msg = (f"Edit failed: oldText was not found in {path}. Re-read the file and retry with text that "
               f"matches exactly, whitespace included.")
        return ToolRun("edit", {"path": path, "oldText": bad_old, "newText": new}, msg, True, error_line=msg)
    proj.replace(path, old, new)
    first = anchor + 1
    diff = [f"  {first - 1:>4} {lines[anchor - 1] if anchor else ''}".rstrip(),
            *[f"  {first + i:>4} {ln}" for i, ln in enumerate(old_lines)],
            *[f"+ {first + len(old_lines) + i:>4} {ln}" for i, ln in enumerate(new_body)],
            f"  {first + len(old_lines) + len(new_body):>4} ..."]
    return ToolRun("edit", {"path": path, "oldText": old, "newText": new},
                   f"Replaced 1 block in {path} ({len(old)} → {len(new)} characters).",
                   details={"diff": "\n".join(diff), "firstChangedLine": first + len(old_lines)}, modified=True)


# --------------------------------------------------------------------------------------------- write


def write(proj: Project, rng: random.Random, path: str, subject: str) -> ToolRun:
    funcs = proj.functions(subject)[:4] if proj.exists(subject) else ["main"]
    mod = subject.removeprefix(f"src/{proj.pkg}/").removesuffix(".py").replace("/", ".")
    tests = []
    lines = ['"""Regression tests written while fixing edge cases."""', "", "import pytest", "",
             f"from {proj.pkg}.{mod} import {', '.join(sorted(set(funcs)))}", ""]
    for f in funcs:
        for case in rng.sample(TEST_CASES, rng.randint(1, 4)):
            name = f"test_{f}_{case}"
            tests.append(name)
            lines += ["", "", f"def {name}(tmp_path):",
                      f"    data = tmp_path / \"{case}.txt\"",
                      "    data.write_text(\"Größe;prix (€)\\n1;2\\n\", encoding=\"utf-8\")",
                      f"    assert {f}(data) is not None"]
    content = "\n".join(lines) + "\n"
    proj.write(path, content, tests)
    return ToolRun("write", {"path": path, "content": content},
                   f"Wrote {len(content.encode())} bytes to {path}", modified=True)


# ---------------------------------------------------------------------------------------------- grep


def grep(proj: Project, rng: random.Random, pattern: str) -> ToolRun:
    where = rng.choice(["src", "tests", "."])
    args: dict[str, Any] = {"pattern": pattern, "path": where}
    if rng.random() < 0.3:
        args["glob"] = "*.py"
    hits = [h for h in proj.grep(pattern) if where == "." or h.startswith(where + "/")]
    return ToolRun("grep", args, "\n".join(hits) if hits else "No matches found")


# ---------------------------------------------------------------------------------------------- bash


def all_tests(proj: Project) -> list[tuple[str, str]]:
    return [(p, name) for p in proj.tests for name in proj.functions(p)]


def traceback(proj: Project, rng: random.Random, path: str, func: str, cwd: str) -> tuple[str, str]:
    """A Python traceback through real lines of the synthetic files; returns (text, last line)."""
    line = proj.line_of(path, f"def {func}(")
    src = proj.file(path).text.split("\n")
    body = src[line] if line < len(src) else "pass"
    other = rng.choice(proj.modules)
    ofunc = rng.choice(proj.functions(other))
    oline = proj.line_of(other, f"def {ofunc}(")
    exc, msg = rng.choice((
        ("ValueError", "could not convert string to float: 'prix (€)'"),
        ("KeyError", "'encoding'"),
        ("TypeError", "expected str, bytes or os.PathLike object, not NoneType"),
        ("UnicodeDecodeError", "'utf-8' codec can't decode byte 0xe9 in position 14: invalid continuation byte"),
        ("AttributeError", "'NoneType' object has no attribute 'strip'"),
        ("IndexError", "list index out of range"),
    ))
    last = f"{exc}: {msg}"
    text = "\n".join([
        "Traceback (most recent call last):",
        f'  File "{cwd}/{path}", line {line + 2}, in {func}',
        f"    {body.strip()}",
        f'  File "{cwd}/{other}", line {oline + 3}, in {ofunc}',
        f"    {ofunc}(value)",
        last,
    ])
    return text, last


def pytest_run(proj: Project, rng: random.Random, cwd: str, *, target: str | None, fail: bool,
               verbose: bool, src_path: str, func: str) -> tuple[str, int, str | None]:
    tests = all_tests(proj)
    if target:
        tests = [t for t in tests if t[0] == target] or tests[:5]
    head = ["============================= test session starts ==============================",
            "platform linux -- Python 3.12.4, pytest-8.3.3, pluggy-1.5.0",
            f"rootdir: {cwd}", "configfile: pyproject.toml", f"collected {len(tests)} items", ""]
    failed = None
    if fail and tests:
        failed = tests[rng.randrange(len(tests))]
    body: list[str] = []
    n = len(tests)
    if verbose:
        for i, t in enumerate(tests, 1):
            status = "FAILED" if t == failed else "PASSED"
            body.append(f"{t[0]}::{t[1]} {status}".ljust(70) + f" [{100 * i // n:>3}%]")
    else:
        done = 0
        by_file: dict[str, list[tuple[str, str]]] = {}
        for t in tests:
            by_file.setdefault(t[0], []).append(t)
        for f, ts in by_file.items():
            done += len(ts)
            dots = "".join("F" if t == failed else "." for t in ts)
            body.append(f"{f} {dots}".ljust(72) + f" [{100 * done // n:>3}%]")
    secs = round(rng.uniform(0.4, 9.5), 2)
    tail: list[str] = [""]
    last = None
    code = 0
    if failed:
        tb, last = traceback(proj, rng, src_path, func, cwd)
        tail += ["=================================== FAILURES ===================================",
                 f"{'_' * 20} {failed[1]} {'_' * 20}", "",
                 "tmp_path = PosixPath('/tmp/pytest-of-dev/pytest-42/test0')", "",
                 f"    def {failed[1]}(tmp_path):",
                 ">       result = subject(source)", "",
                 f"{failed[0]}:{rng.randint(8, 120)}: ",
                 "_ " * 39, *["    " + ln for ln in tb.split("\n")[1:-1]], f"E   {last}", "",
                 "=========================== short test summary info ============================",
                 f"FAILED {failed[0]}::{failed[1]} - {last}",
                 f"========================= 1 failed, {n - 1} passed in {secs}s ========================="]
        code = 1
    else:
        tail.append(f"============================== {n} passed in {secs}s ==============================")
    return "\n".join(head + body + tail), code, last


def bash(proj: Project, rng: random.Random, cwd: str, kind: str, *, src_path: str, func: str,
         test_path: str | None = None, fail: bool = False, cap: int | None = None) -> ToolRun:
    """Run a synthetic shell command of the given kind; non-zero exits become isError results."""
    last: str | None = None
    code = 0
    timeout = None
    if kind in ("pytest", "pytest_focused", "pytest_verbose"):
        focused = kind == "pytest_focused" and test_path is not None
        cmd = (f"python -m pytest {test_path} -x -q" if focused
               else "python -m pytest -v" if kind == "pytest_verbose" else "python -m pytest -q")
        out, code, last = pytest_run(proj, rng, cwd, target=test_path if focused else None,
                                     fail=fail, verbose=kind == "pytest_verbose",
                                     src_path=src_path, func=func)
        timeout = rng.choice([None, 120, 300])
    elif kind == "ruff":
        cmd = "ruff check src tests"
        if fail:
            rows = [f"{rng.choice(proj.modules)}:{rng.randint(3, 300)}:{rng.randint(1, 40)}: "
                    f"{rng.choice(['F401 `os` imported but unused', 'E501 Line too long (131 > 110)', 'F841 Local variable `result` is assigned to but never used', 'B006 Do not use mutable data structures for argument defaults'])}"
                    for _ in range(rng.randint(1, 12))]
            out = "\n".join(rows) + f"\nFound {len(rows)} errors.\n[*] {len(rows) // 2} fixable with the `--fix` option."
            code, last = 1, rows[0]
        else:
            out = "All checks passed!"
    elif kind == "mypy":
        cmd = "mypy src"
        if fail:
            last = (f"{src_path}:{proj.line_of(src_path, f'def {func}(') + 2}: error: Argument 1 to \"{func}\" "
                    "has incompatible type \"str | None\"; expected \"str\"  [arg-type]")
            out = f"{last}\nFound 1 error in 1 file (checked {len(proj.modules)} source files)"
            code = 1
        else:
            out = f"Success: no issues found in {len(proj.modules)} source files"
    elif kind == "git_status":
        cmd = "git status --short"
        changed = rng.sample(proj.all_paths(), min(len(proj.all_paths()), rng.randint(0, 5)))
        out = "\n".join(f"{rng.choice([' M', 'M ', '??'])} {p}" for p in changed)
    elif kind == "git_diff":
        cmd = rng.choice(["git diff", f"git diff {src_path}"])
        src = proj.file(src_path).text.split("\n")
        out_lines = [f"diff --git a/{src_path} b/{src_path}", "index 3f2a9c1..8b7e0d4 100644",
                     f"--- a/{src_path}", f"+++ b/{src_path}"]
        pos = 0
        for _ in range(rng.randint(2, 40)):
            pos = min(len(src) - 1, pos + rng.randint(5, 60))
            out_lines.append(f"@@ -{pos},7 +{pos},9 @@")
            ctx = src[pos: pos + 7]
            out_lines += [" " + ln for ln in ctx[:3]] + ["-" + ln for ln in ctx[3:4]]
            out_lines += ["+" + ln + "  # handled" for ln in ctx[3:4]] + ["+    # see issue #" + str(rng.randint(100, 999))]
            out_lines += [" " + ln for ln in ctx[4:]]
        out = "\n".join(out_lines)
    elif kind == "git_log":
        cmd = "git log --oneline -n 30"
        out = "\n".join(f"{rng.getrandbits(28):07x} {rng.choice(['fix', 'feat', 'refactor', 'test', 'docs', 'chore'])}: "
                        f"{rng.choice(['handle empty rows', 'retry on 503', 'split parser', 'bump deps', 'typo in README', 'faster export', 'unicode headers'])}"
                        for _ in range(30))
    elif kind == "ls":
        d = src_path.rsplit("/", 1)[0]
        cmd = f"ls -la {d}"
        names = sorted({p.removeprefix(d + "/").split("/")[0] for p in proj.all_paths() if p.startswith(d + "/")})
        out = "\n".join([f"total {8 * len(names)}"] + [
            f"-rw-r--r--  1 dev dev {rng.randint(200, 90000):>6} Mar {rng.randint(1, 28):>2} {rng.randint(8, 19):02d}:{rng.randint(0, 59):02d} {n}"
            for n in names])
    elif kind == "python":
        cmd = f"python -c \"from {proj.pkg} import cli; cli.main(['export', 'data/sample.csv'])\""
        if fail:
            out, last = traceback(proj, rng, src_path, func, cwd)
            code = 1
        else:
            out = f"exported {rng.randint(10, 50000)} rows to out/sample.json"
    elif kind == "logs":
        cmd = "tail -n 600 logs/worker.log"
        rows = []
        for i in range(rng.randint(40, 600)):
            lvl = rng.choice(["INFO", "INFO", "INFO", "DEBUG", "WARNING", "ERROR"])
            rows.append(f"2025-03-{rng.randint(1, 28):02d} {rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:"
                        f"{rng.randint(0, 59):02d},{rng.randint(0, 999):03d} {lvl:<7} {proj.pkg}.worker "
                        f"job={rng.getrandbits(24):06x} {rng.choice(['picked up', 'retrying after 503', 'done in 412ms', 'cache miss', 'slow query (2.3s)', 'connection reset by peer'])}")
        out = "\n".join(rows)
    else:  # missing tool
        cmd = rng.choice(["rg --files | wc -l", "jq '.rows | length' out/sample.json"])
        out = f"bash: {cmd.split()[0]}: command not found"
        code, last = 127, out
    text = _cap_tail(out, cap) if out else "(no output)"
    args: dict[str, Any] = {"command": cmd}
    if timeout:
        args["timeout"] = timeout
    return ToolRun("bash", args, _exit(text, code), code != 0, error_line=last)
