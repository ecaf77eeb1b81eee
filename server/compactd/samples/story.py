"""Generated sessions that know their own ground truth, for the summary-quality benchmark.

`generate_story(seed)` writes a small but realistic Pi v3 session about one feature and returns,
with its JSONL lines, what actually happened in the part a compaction would summarize: the task
wording, the user's standing constraints, the plan the user rejected and the one chosen, the files
created, modified, renamed and deleted, the errors (and whether a later run resolved them), the
commit message, the interruptions and pastes that are noise, and the work still open at the cut.
From that truth it derives `Probe`s (samples.probes) — questions a good summary answers.

Every choice comes from `random.Random(seed)` and the clock is fixed, so a seed always gives the
same bytes. Odd seeds start with an earlier compaction whose summary carries constraints and done
work of its own (update mode: the probes then check they survive). Seeds also vary the feature,
the wording of the assistant's proposal and of the user's correction, whether the second rule comes
with the correction or on its own, `git mv`/`mv` and `git rm`/`rm`, the test command, whether the
last check is fixed or left failing, and whether the cut comes mid-work or on an unanswered request.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from compactd.samples.generate import dumps, iso_ms
from compactd.samples.probes import Probe, any_of

__all__ = ["Story", "StoryTruth", "generate_story"]

_START_MS = 1_741_000_000_000

# (feature request, distinctive phrase of it, module, symbol, new file, follow-up ask, its keyword)
_FEATURES = (
    ("Add a `--since DATE` option to the `export` command in {mod}: it should only export rows newer "
     "than DATE, compared in UTC.", "only export rows newer than DATE", "cli.py", "export_rows",
     "tests/test_export_since.py", "update the CHANGELOG entry for `--since`", "CHANGELOG entry"),
    ("Make `{sym}` in {mod} retry failed uploads: at most 3 attempts with a growing delay, and never "
     "retry a 4xx answer.", "never retry a 4xx answer", "upload.py", "upload_batch",
     "tests/test_upload_retry.py", "document the retry behaviour in docs/uploads.md", "retry behaviour"),
    ("The importer in {mod} must accept semicolon-separated files as well as commas; detect the "
     "delimiter from the header line.", "detect the delimiter from the header line", "importer.py",
     "read_table", "tests/test_delimiters.py", "add a `--delimiter` override flag", "--delimiter"),
    ("Add a per-user rate limit to `{sym}` in {mod}: 100 requests per minute, answer 429 with a "
     "Retry-After header beyond that.", "answer 429 with a Retry-After header", "limits.py",
     "check_quota", "tests/test_rate_limit.py", "expose the limit in the settings file", "expose the limit"),
    ("Cache the parsed config in {mod} so `{sym}` stops re-reading the file on every call; the cache "
     "must be invalidated when the file's mtime changes.", "invalidated when the file's mtime changes",
     "config.py", "load_config", "tests/test_config_cache.py", "add a `--no-cache` switch for debugging",
     "--no-cache"),
)
# (rejected plan, reason the user gives, chosen plan, words that identify each)
_PLANS = (
    ("a global module-level dict", "that leaks between tests", "an explicit cache object passed in",
     "global", "cache object"),
    ("a background thread", "we can't have threads in the worker", "a plain loop with sleep in the caller",
     "background thread", "loop"),
    ("the `dateutil` package", "no new dependencies", "`datetime.fromisoformat` from the standard library",
     "dateutil", "fromisoformat"),
    ("monkeypatching in the tests", "tests must use the real code path", "a fake server fixture",
     "monkeypatch", "fake server"),
    ("a subclass of the reader", "inheritance makes this harder to follow", "a small adapter function",
     "subclass", "adapter function"),
)
_CONSTRAINTS = (
    ("Keep the public API unchanged.", r"public API"),
    ("No new dependencies, please.", r"new dependenc"),
    ("Tests must run against the real file system, no mocks.", r"no mocks|real file system"),
    ("Keep it compatible with Python 3.10.", r"Python 3\.10"),
    ("Always run `ruff check` before committing.", r"ruff check"),
    ("Never push to main directly; open a PR.", r"push to main|open a PR"),
)
_ERRORS = (
    ("AssertionError: assert 0 == 3", "FAILED tests/{test} - AssertionError: assert 0 == 3"),
    ("TypeError: can't compare offset-naive and offset-aware datetimes",
     "E   TypeError: can't compare offset-naive and offset-aware datetimes"),
    ("KeyError: 'delimiter'", "E   KeyError: 'delimiter'"),
    ("AttributeError: 'NoneType' object has no attribute 'mtime'",
     "E   AttributeError: 'NoneType' object has no attribute 'mtime'"),
)
_LINT_ERRORS = (
    "error: Module \"{pkg}.helpers\" has no attribute \"{old_sym}\"  [attr-defined]",
    "F401 `{pkg}.legacy_io` imported but unused",
    "error: Name \"{old_sym}\" is not defined  [name-defined]",
)
_PKGS = ("ledger", "tally", "harbor", "quill", "orbit", "sprout")
_PREVIOUS_CONSTRAINTS = (
    ("Commit after every finished step with a descriptive message.", r"commit after every"),
    ("Use the existing logger, never print().", r"existing logger|print\(\)"),
    ("Docstrings in Google style.", r"Google style"),
)


@dataclass
class StoryTruth:
    seed: int
    task: str
    task_phrase: str
    constraints: list[str]
    previous_constraint: str | None
    rejected_plan: str
    chosen_plan: str
    created: list[str]
    modified: list[str]
    renamed: list[tuple[str, str]]
    deleted: list[str]
    errors: list[tuple[str, bool]]  # (exact error line, resolved later?)
    commit_message: str
    next_step: str
    noise: list[str] = field(default_factory=list)  # texts that must not become goals or decisions


@dataclass
class Story:
    lines: list[str]
    truth: StoryTruth
    probes: list[Probe]
    region_start_id: str  # first entry a compaction at the cut would summarize
    first_kept_id: str  # the cut: this entry and everything after it are kept
    previous_summary: str | None

    def text(self) -> str:
        return "".join(line + "\n" for line in self.lines)


def _lit(text: str) -> str:
    """A literal pattern tolerant of whitespace and backticks between the words."""
    return r"[\s`]+".join(re.escape(w) for w in re.split(r"[\s`]+", text.strip(" `")) if w)


class _Writer:
    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.now = _START_MS
        self.parent: str | None = None
        self.lines: list[str] = []
        self.calls = 0

    def _id(self) -> str:
        return f"{self.rng.getrandbits(32):08x}"

    def entry(self, type_: str, **fields: Any) -> str:
        self.now += self.rng.randint(800, 20_000)
        eid = self._id()
        e = {"type": type_, "id": eid, "parentId": self.parent, "timestamp": iso_ms(self.now), **fields}
        self.lines.append(dumps(e))
        self.parent = eid
        return eid

    def user(self, text: str) -> str:
        return self.entry("message", message={"role": "user", "content": [{"type": "text", "text": text}],
                                              "timestamp": self.now})

    def assistant(self, text: str | None, *calls: tuple[str, dict[str, Any]], stop: str | None = None) -> list[str]:
        content: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
        ids = []
        for name, args in calls:
            self.calls += 1
            cid = f"toolu_{self.rng.getrandbits(64):016x}{self.calls:04d}"
            ids.append(cid)
            content.append({"type": "toolCall", "id": cid, "name": name, "arguments": args})
        usage = {"input": 10, "output": 80, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 90,
                 "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}}
        self.entry("message", message={"role": "assistant", "content": content, "api": "anthropic-messages",
                                       "provider": "anthropic", "model": "claude-sonnet-4-5", "usage": usage,
                                       "stopReason": stop or ("toolUse" if calls else "stop"), "timestamp": self.now})
        return ids

    def result(self, cid: str, name: str, text: str, *, error: bool = False) -> str:
        return self.entry("message", message={"role": "toolResult", "toolCallId": cid, "toolName": name,
                                              "content": [{"type": "text", "text": text}], "isError": error,
                                              "timestamp": self.now})

    def step(self, text: str | None, name: str, args: dict[str, Any], out: str, *, error: bool = False) -> None:
        (cid,) = self.assistant(text, (name, args))
        self.result(cid, name, out, error=error)


def generate_story(seed: int, *, cwd: str = "/home/dev/project") -> Story:
    rng = random.Random(seed)
    w = _Writer(rng)
    pkg = rng.choice(_PKGS)
    feature = _FEATURES[rng.randrange(len(_FEATURES))]
    request_t, phrase, mod_name, sym, new_test, follow_up, follow_key = feature
    mod = f"src/{pkg}/{mod_name}"
    task = request_t.format(mod=mod, sym=sym)
    rejected, reason, chosen, rejected_key, chosen_key = _PLANS[rng.randrange(len(_PLANS))]
    c1, c2 = rng.sample(_CONSTRAINTS, 2)
    err_short, err_line_t = _ERRORS[rng.randrange(len(_ERRORS))]
    err_line = err_line_t.format(test=new_test)
    old_sym, new_sym = f"_legacy_{sym}", f"{sym}_impl"
    old_file, new_file = f"src/{pkg}/helpers.py", f"src/{pkg}/{sym.split('_')[0]}_helpers.py"
    dead_file = f"src/{pkg}/legacy_io.py"
    lint_error = rng.choice(_LINT_ERRORS).format(pkg=pkg, old_sym=old_sym)
    lint_resolved = rng.random() < 0.5
    update_mode = seed % 2 == 1
    commit_msg = rng.choice(("Add {f} with tests", "Implement {f}; rename helpers module")).format(
        f=sym.replace("_", " "))

    w.lines.append(dumps({"type": "session", "version": 3, "id": f"0195{seed:04x}-0000-7000-8000-{seed:012x}",
                          "timestamp": iso_ms(w.now), "cwd": cwd}))
    w.entry("model_change", provider="anthropic", modelId="claude-sonnet-4-5")

    previous_summary = None
    prev_constraint: tuple[str, str] | None = None
    if update_mode:
        prev_constraint = _PREVIOUS_CONSTRAINTS[rng.randrange(len(_PREVIOUS_CONSTRAINTS))]
        w.user("Give me a quick tour of the package layout.")
        w.step(None, "bash", {"command": f"ls src/{pkg}"}, f"__init__.py\n{mod_name}\nhelpers.py\nlegacy_io.py\n")
        kept = w.user(f"Thanks. Before we start: {prev_constraint[0]}")
        w.assistant("Noted.")
        previous_summary = (
            "## Goal\nGet familiar with the package layout.\n\n"
            f"## Constraints & Preferences\n- {prev_constraint[0]}\n\n"
            f"## Progress\n### Done\n- [x] Listed the modules of src/{pkg}\n\n### In Progress\n- (none)\n\n"
            "### Blocked\n- (none)\n\n## Key Decisions\n- **Work in small commits**: easier review\n\n"
            "## Next Steps\n1. Wait for the first task\n\n"
            f"## Critical Context\n- Package `{pkg}` lives under src/{pkg}"
        )
        w.entry("compaction", summary=previous_summary, firstKeptEntryId=kept, tokensBefore=4200,
                details={"readFiles": [], "modifiedFiles": []})
        region_start = kept
    else:
        region_start = ""

    # -- the task, the rejected plan and the chosen one ----------------------------------------
    first = w.user(f"{task} {c1[0]}")
    region_start = region_start or first
    w.step(f"Let me look at {mod} first.", "read", {"path": mod},
           f"def {sym}(rows):\n    return [r for r in rows]\n\n\ndef {old_sym}(x):\n    return x\n")
    w.assistant(rng.choice((
        f"I'll implement it with {rejected}: it is the quickest change and keeps {sym} small. Shall I go ahead?",
        f"Plan: use {rejected} — the quickest change, and {sym} stays small. OK?",
        f"Two options: {rejected}, or a bigger refactor. I'd go with {rejected} to keep the diff small.",
    )))
    rule_apart = rng.random() < 0.4  # the second rule comes in a message of its own, later
    w.user(rng.choice((
        f"No, don't use {rejected} — {reason}. Use {chosen} instead.",
        f"Hmm, not {rejected}: {reason}. Go with {chosen}.",
        f"Actually, scrap {rejected}, {reason}. I'd rather have {chosen}.",
    )) + ("" if rule_apart else f" {c2[0]}"))
    w.step(f"Understood: {chosen} instead of {rejected}.", "edit",
           {"path": mod, "oldText": f"def {sym}(rows):", "newText": f"def {sym}(rows, *, since=None):"},
           f"Successfully replaced text in {mod}.")
    w.step("Now a test file for it.", "write", {"path": new_test, "content": f"def test_{sym}():\n    ...\n"},
           f"Successfully wrote 48 bytes to {new_test}")
    w.step(None, "bash", {"command": f"python -m pytest -q {new_test}"},
           f"F\n{err_line}\n1 failed in 0.21s\n\nCommand exited with code 1", error=True)
    w.step(f"The filter runs before {chosen_key}; fixing the order.", "edit",
           {"path": mod, "oldText": "return [r for r in rows]", "newText": "return [r for r in rows if keep(r)]"},
           f"Successfully replaced text in {mod}.")
    w.step(None, "bash", {"command": rng.choice((f"python -m pytest -q {new_test}", f"pytest -q {new_test}"))},
           "...\n3 passed in 0.18s")
    if rule_apart:
        w.user(f"One more rule: {c2[0]}")

    # -- noise: an acknowledgement, an interrupted command, a pasted log line -----------------------
    w.user("ok")
    (cid,) = w.assistant(None, ("bash", {"command": "python -m pytest -q"}))
    w.result(cid, "bash", "Command aborted", error=True)
    paste = dumps({"level": "warn", "ts": "2025-03-03T08:30:00Z", "msg": "slow request", "path": "/export"})
    w.user(f"ignore that, I stopped it. This showed up in the log btw:\n{paste}\ncan probably leave it")

    # -- rename + delete, then lint, then commit ----------------------------------------------------
    w.user(f"Now rename {old_file} to {new_file}, and delete {dead_file}, it's dead code.")
    w.step(None, "bash", {"command": f"{rng.choice(('git mv', 'mv'))} {old_file} {new_file}"}, "(no output)")
    w.step(None, "bash", {"command": f"{rng.choice(('git rm -q', 'rm -f'))} {dead_file}"}, "(no output)")
    w.step("Updating the import.", "edit",
           {"path": mod, "oldText": f"from {pkg}.helpers import", "newText": f"from {pkg}.{new_file[len(f'src/{pkg}/'):-3]} import"},
           f"Successfully replaced text in {mod}.")
    w.step(None, "bash", {"command": "ruff check src tests && mypy src"},
           f"src/{pkg}/{mod_name}:3: {lint_error}\nFound 1 error in 1 file (checked 9 source files)\n\n"
           "Command exited with code 1", error=True)
    errors = [(err_line, True)]
    if lint_resolved:
        w.step("One leftover reference; fixing it.", "edit",
               {"path": mod, "oldText": old_sym, "newText": new_sym}, f"Successfully replaced text in {mod}.")
        w.step(None, "bash", {"command": "ruff check src tests && mypy src"},
               "All checks passed!\nSuccess: no issues found in 9 source files")
        w.step(None, "bash", {"command": f'git add -A && git commit -m "{commit_msg}"'},
               f"[feature 3f2a1bc] {commit_msg}\n 4 files changed, 61 insertions(+), 12 deletions(-)")
        errors.append((lint_error, True))
    else:
        w.assistant(f"The check still fails: {lint_error}. I'll look into it next.")
        w.user(f"Commit what we have first: \"{commit_msg}\". We fix the check afterwards.")
        w.step(None, "bash", {"command": f'git add -A && git commit --no-verify -m "{commit_msg}"'},
               f"[feature 3f2a1bc] {commit_msg}\n 4 files changed, 58 insertions(+), 12 deletions(-)")
        errors.append((lint_error, False))

    # -- the open work at the cut -----------------------------------------------------------------
    # Either the work on the last request has started when the cut comes, or it is not answered yet.
    w.user(f"Good. Next, {follow_up}.")
    if rng.random() < 0.5:
        w.step(f"Starting on that: {follow_up}.", "read",
               {"path": "CHANGELOG.md" if follow_key.startswith("CHANGELOG") else mod}, "# Changelog\n\n## Unreleased\n")
        first_kept = w.user("How far along are you?")
        w.assistant("Still on it.")
    else:
        w.assistant(f"On it: {follow_up}.")
        first_kept = str(w.parent)  # the cut is at the answer: the request itself is summarized

    truth = StoryTruth(
        seed=seed, task=task, task_phrase=phrase, constraints=[c1[0], c2[0]],
        previous_constraint=prev_constraint[0] if prev_constraint else None,
        rejected_plan=rejected, chosen_plan=chosen, created=[new_test], modified=[mod],
        renamed=[(old_file, new_file)], deleted=[dead_file], errors=errors, commit_message=commit_msg,
        next_step=follow_up, noise=[paste, "can probably leave it", "Command aborted"],
    )
    probes = list(_probes(truth, c1[1], c2[1], prev_constraint[1] if prev_constraint else None,
                          rejected_key, chosen_key, follow_key))
    return Story(w.lines, truth, probes, region_start, first_kept, previous_summary)


_REJECT = r"(?:reject|not |n't|instead of|rather than|no longer|dropp|abandon|over |vetoed|discard|scrap)"



def _probes(t: StoryTruth, c1: str, c2: str, c0: str | None, rejected_key: str, chosen_key: str,
            follow_key: str) -> Iterator[Probe]:
    s = f"s{t.seed}"
    yield Probe(f"{s}-task", "recall", "What exactly did the user ask for?", any_of(_lit(t.task_phrase)))
    lint_line, lint_resolved = t.errors[-1]
    if lint_resolved:
        yield Probe(f"{s}-error", "recall", "Which test failure was hit while implementing?",
                    any_of(re.escape(t.errors[0][0].split("E   ")[-1].split(" - ")[-1])))
    else:
        yield Probe(f"{s}-error", "recall", "What is the exact error that still fails the check?",
                    any_of(re.escape(lint_line)))
    yield Probe(f"{s}-commit", "recall", "What was the commit message?", any_of(re.escape(t.commit_message)))
    created, modified = t.created[0], t.modified[0]
    (old, new), deleted = t.renamed[0], t.deleted[0]
    yield Probe(f"{s}-created", "artifact", "Which file was created?",
                any_of(rf"(?:creat|wrote|writ|new|add)[^\n]{{0,120}}{re.escape(created)}",
                       rf"{re.escape(created)}[^\n]{{0,40}}(?:created|new file|added)"))
    yield Probe(f"{s}-modified", "artifact", "Which existing file was changed?",
                any_of(rf"(?:edit|modif|chang|updat|fix)[^\n]{{0,120}}{re.escape(modified)}",
                       rf"{re.escape(modified)}[^\n]{{0,60}}(?:edited|modified|changed|updated)"))
    yield Probe(f"{s}-renamed", "artifact", "Which file was renamed, and to what?",
                any_of(rf"{re.escape(old)}[^\n]{{0,60}}(?:→|->|\bto\b|⇒)[^\n]{{0,20}}{re.escape(new)}",
                       rf"(?:renam|mov|git mv)[^\n]{{0,30}}{re.escape(old)}[^\n]{{0,30}}{re.escape(new)}"),
                forbid=(rf"^[^\n]*(?:edit|modif)[^\n]*{re.escape(old)}(?![^\n]*(?:→|->|renam|\bto\b))",),
                forbid_within=("done", "progress"))
    yield Probe(f"{s}-deleted", "artifact", "Which file was deleted?",
                any_of(rf"(?:delet|remov|\brm\b)[^\n]{{0,80}}{re.escape(deleted)}",
                       rf"{re.escape(deleted)}[^\n]{{0,40}}(?:deleted|removed)"))
    yield Probe(f"{s}-chosen", "decision", "Which approach was chosen?",
                any_of(re.escape(chosen_key)), within=("decision", "progress", "done", "goal", "context"))
    rk = re.escape(rejected_key)
    yield Probe(f"{s}-rejected", "decision", "Which approach did the user reject?",
                any_of(rf"{_REJECT}[^\n]{{0,80}}{rk}", rf"{rk}[^\n]{{0,120}}{_REJECT}"),
                forbid=(rf"^(?![^\n]*{_REJECT})[^\n]*{rk}",), forbid_within=("decision",))
    yield Probe(f"{s}-constraint-1", "constraint", "Which rule did the user set with the task?", any_of(c1))
    yield Probe(f"{s}-constraint-2", "constraint", "Which rule did the user add when correcting the plan?",
                any_of(c2))
    if c0 is not None:
        yield Probe(f"{s}-constraint-carried", "constraint", "Which rule from before the last compaction holds?",
                    any_of(c0))
    yield Probe(f"{s}-next", "continuation", "What is the next step?", any_of(re.escape(follow_key)),
                within=("next", "in progress", "current"))
    if lint_resolved:
        yield Probe(f"{s}-resolved", "continuation", "Does the check pass now (nothing blocking)?",
                    any_of(r"(?:ruff check|mypy)"), forbid=(re.escape(lint_line[:60]), r"Command aborted"),
                    forbid_within=("blocked", "next"))
    else:
        yield Probe(f"{s}-blocked", "continuation", "What still fails?", any_of(re.escape(lint_line[:60])),
                    within=("blocked", "next", "in progress", "current"))
    yield Probe(f"{s}-goal", "continuation", "Is the goal the task itself, free of pasted lines and asides?",
                any_of(_lit(t.task_phrase)), within=("goal",), forbid=(r"slow request", r"can probably leave it"), forbid_within=("goal",))
