"""Natural-language pieces of generated sessions: user requests, thinking, replies, summaries.

All wording here is written for this generator. Only the summary section headings, the split-turn
separator and the file-list tags follow the formats fixed by the spec (§8.2, §10.2, §11 O-4).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

CONSTRAINTS = (
    "Don't change the public API.",
    "Keep it compatible with Python 3.10.",
    "No new dependencies, please.",
    "Don't touch anything under storage/migrations.",
    "Keep the CLI flags backwards compatible.",
    "Use the existing logger, no print() calls.",
    "Don't reformat unrelated code — the diff should stay small.",
    "Keep functions short; split if something grows past ~40 lines.",
    "Type hints everywhere, mypy --strict has to stay green.",
    "Make sure the tests still run in under 10 seconds.",
)

# Non-ASCII flavour: accents, CJK, Greek, arrows, emoji.
FLAVOURS = (
    " Thanks! 🙏", " 👍", " 🚀", " (merci !)", " ✅ when done.", " — no rush ☕",
    " Headers like «Größe» and «prix (€)» must survive.", " 日本語のファイル名でも動くようにしてください。",
    " The user report said: «ça plante avec des accents».", " Greek input (Ελληνικά) too, please.",
    " Input → output should be lossless.", " 🐛🔥", "", "", "", "",
)

ALTERNATIVES = (
    "a small adapter class instead of touching the call sites",
    "a generator-based approach so we never hold the whole file in memory",
    "a feature flag in config so the old path stays available",
    "the standard library's csv.Sniffer instead of hand-rolled detection",
    "an explicit state machine rather than the nested ifs",
    "caching at the storage layer instead of in the client",
)

# (request template, title template, kind)
_REQUESTS: tuple[tuple[str, str, str], ...] = (
    ("`{func}` in {path} blows up when a line ends with a trailing comma. Fix it and add a regression test. {c}",
     "Fix trailing-comma crash in `{func}` ({path})", "change"),
    ("Add retry with exponential backoff and jitter around `{func}` in {path}. Max 5 attempts, give up on 4xx. {c}",
     "Add retry/backoff to `{func}` ({path})", "change"),
    ("Refactor {path}: `{func}` does too many things. Split it into smaller helpers. {c}",
     "Split `{func}` into helpers ({path})", "change"),
    ("Why does `{test}` fail intermittently on CI? Read {path} and tell me what you think before changing anything.",
     "Explain the flaky `{test}`", "question"),
    ("We need to support files with non-ASCII headers. Right now `{func}` mangles them. {c}",
     "Keep non-ASCII headers intact in `{func}` ({path})", "change"),
    ("Run the full test suite and fix whatever is broken. {c}",
     "Get the test suite green (started at `{func}`, {path})", "change"),
    ("Write tests for {path}. Cover empty input, unicode (e.g. 'naïve café ☕') and very long lines.",
     "Add edge-case tests for {path}", "change"),
    ("Rename `{func}` to `{new}` across the codebase and update the call sites. {c}",
     "Rename `{func}` to `{new}`", "change"),
    ("`{func}` takes ~4s on a 200k-row input. Profile it and make it faster. {c}",
     "Speed up `{func}` ({path})", "change"),
    ("The error raised by `{func}` should include the file name and the line number. Small change. {c}",
     "Better error message in `{func}` ({path})", "change"),
    ("Add a `--dry-run` flag to the CLI that reports what would change without writing anything. {c}",
     "Add `--dry-run` (touches `{func}` in {path})", "change"),
    ("Please review {path} for thread-safety issues; the scheduler calls `{func}` from several workers.",
     "Review thread-safety of `{func}` ({path})", "question"),
    ("Can you add type hints to {path} and make mypy happy? {c}",
     "Type hints for {path}", "change"),
    ("Look at the logging in {path}: it's way too chatty at INFO level. Tone it down. {c}",
     "Reduce INFO logging in {path}", "change"),
    ("The export produces a BOM on Windows and the importer chokes on it. Handle it in `{func}`. {c}",
     "Strip the UTF-8 BOM in `{func}` ({path})", "change"),
    ("Explain how `{func}` and the cache interact. I want to understand the invalidation rules.",
     "Explain cache invalidation around `{func}`", "question"),
)

_FOLLOW_UPS: tuple[tuple[str, str, str], ...] = (
    ("Looks good, but can you also handle the case where `{func}` gets None? {c}",
     "Handle None input in `{func}`", "change"),
    ("ok now run the whole suite again", "Re-run the suite after `{func}` changes", "change"),
    ("Nice. One more thing: the docstring of `{func}` is out of date.", "Update the docstring of `{func}`", "change"),
    ("Hmm, that test name is confusing. Rename it to something that says what it checks.",
     "Rename the new test for `{func}`", "change"),
    ("That works. Can you squash the helper into `{func}`? It's only used once.",
     "Inline the helper into `{func}`", "change"),
)

_REASKS: tuple[tuple[str, str, str], ...] = (
    ("Actually, let's approach this differently: use {alt}. {c}", "Redo `{func}` with {alt}", "change"),
    ("Scratch that. Go back to the original `{func}` and try {alt} instead.", "Redo `{func}` with {alt}", "change"),
    ("On second thought I prefer {alt}. Redo it that way, please.{f}", "Redo `{func}` with {alt}", "change"),
)


@dataclass
class Task:
    """What one user turn is about; feeds thinking, replies and summaries."""

    kind: str
    request: str
    path: str
    func: str
    test_path: str
    constraint: str | None
    title: str
    decision: str
    user_id: str = ""
    status: str = "in_progress"
    errors: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)


class RequestPicker:
    """Cycles through the request templates in a per-session shuffled order, so turns rarely repeat."""

    def __init__(self, rng: random.Random) -> None:
        self._rng = rng
        self._queues: dict[str, list[int]] = {}

    def pick(self, name: str, size: int) -> int:
        q = self._queues.get(name)
        if not q:
            q = list(range(size))
            self._rng.shuffle(q)
            self._queues[name] = q
        return q.pop()


def new_task(rng: random.Random, picker: RequestPicker, path: str, func: str, test_path: str, test_name: str, *,
             follow_up: bool = False, reask: bool = False) -> Task:
    c = None
    if rng.random() < 0.45:  # the public-API constraint is the one users state most often
        c = CONSTRAINTS[0] if rng.random() < 0.3 else rng.choice(CONSTRAINTS)
    name = "reask" if reask else "follow" if follow_up else "request"
    pool = _REASKS if reask else _FOLLOW_UPS if follow_up else _REQUESTS
    template, title_t, kind = pool[picker.pick(name, len(pool))]
    values = {"path": path, "func": func, "test": test_name, "c": c or "", "alt": rng.choice(ALTERNATIVES),
              "new": f"{func}_v2" if rng.random() < 0.5 else f"safe_{func}", "f": rng.choice(FLAVOURS)}
    request = " ".join(template.format(**values).split()) + rng.choice(FLAVOURS)
    title = title_t.format(**values)
    decision = rng.choice([
        f"**Keep `{func}` signature**: callers in other modules depend on it",
        f"**Validate early in `{func}`**: fail with a clear error instead of a KeyError deep inside",
        f"**Test through the public entry point**: {test_path} exercises the real file handling",
        "**No new dependency**: the standard library covers this",
        "**Stream instead of buffering**: inputs can be hundreds of MB",
        f"**Use {values['alt']}**: smaller diff, easier to revert",
    ])
    return Task(kind, request, path, func, test_path, c, title, decision)


def thinking(rng: random.Random, task: Task, step: int, *, long: bool = False, error: str | None = None,
             doing: str = "read") -> str:
    parts = []
    if step == 0:
        parts.append(f"The request: {task.title[0].lower() + task.title[1:]}.")
        if task.constraint:
            parts.append(f"Constraint to respect: {task.constraint.lower()} So the call sites of "
                         f"`{task.func}` must keep working unchanged.")
    if error:
        parts.append(f"The last step failed with `{error[:160]}`.")
        parts.append(rng.choice((
            "The edit text probably drifted from the file; I need the exact current text.",
            f"So `{task.func}` gets a value it does not expect; a guard at the top should handle it.",
            "This looks like an encoding issue at the boundary, not a logic bug.",
            "The failing test is right — the code is wrong here.",
        )))
    pool = {
        "read": (
            f"I should read {task.path} first to see how `{task.func}` is wired before touching anything.",
            f"Let me check where `{task.func}` is called from; changing its return type would ripple out.",
            "Before editing I want the exact text of the block so the edit matches byte for byte.",
            "There may be two call sites that pass bytes instead of str; I need to see both.",
        ),
        "edit": (
            "The simplest fix is a guard at the top of the function plus a regression test.",
            "I could also cache the compiled regex at module level; that would remove most of the per-row cost.",
            "I'll keep the diff minimal and not reformat neighbouring code.",
            f"Converting at the edge keeps `{task.func}` itself simple.",
        ),
        "bash": (
            f"The focused test in {task.test_path} is cheaper to run than the whole suite.",
            "Running ruff after the edit will catch an unused import if I left one behind.",
            "If the focused tests pass I'll run the full suite once to be safe.",
        ),
        "final": (
            "Everything needed is done; time to report back concisely.",
            "I should mention which files changed and the test result.",
            "The user cares about the constraint, so I'll say explicitly that it was respected.",
        ),
    }[doing if doing in ("read", "edit", "bash", "final") else "read"]
    n = rng.randint(2, len(pool)) if long else rng.randint(1, 2)
    parts += rng.sample(pool, n)
    return " ".join(parts)


def step_text(rng: random.Random, task: Task, kind: str, *, error: bool) -> str:
    if error:
        return rng.choice(("That failed — looking at why.", "The previous step failed; re-checking the file.", ""))
    return rng.choice({
        "read": (f"Let me look at {task.path} first.", "Reading the relevant code.", ""),
        "grep": (f"I'll check how `{task.func}` is used elsewhere.", ""),
        "edit": ("Applying the fix.", f"Updating `{task.func}`.", ""),
        "write": ("Now the tests.", "Adding a regression test file.", ""),
        "bash:git_status": ("Let me get my bearings first.", ""),
        "bash:git_log": ("Checking the recent history.", ""),
        "bash:git_diff": ("Let me see what changed so far.", ""),
        "bash:logs": ("The worker log may show the failure.", ""),
        "bash:ls": ("Looking at the package layout.", ""),
        "bash:pytest": ("Running the whole suite.", ""),
        "bash:pytest_verbose": ("Full suite, verbose, to see every test.", ""),
        "bash:pytest_focused": ("Running the focused tests.", "Checking the result.", ""),
        "bash:ruff": ("Linting.", ""),
        "bash:mypy": ("Type-checking.", ""),
    }.get(kind, ("",)))


def final_reply(rng: random.Random, task: Task, passed: int, seconds: float) -> str:
    if task.kind == "question":
        return (
            f"## {task.title}\n\n"
            f"`{task.func}` lives in `{task.path}`. It is called by the scheduler and by the CLI.\n\n"
            "### Flow\n\n"
            "1. The input is normalized (whitespace stripped, case folded).\n"
            "2. A cache lookup happens **before** any I/O; a hit returns immediately.\n"
            "3. On a miss the value is loaded, validated and written back with a TTL.\n\n"
            "### Problems I see\n\n"
            f"- The cache key ignores the encoding, so two reads of the same file with different encodings collide.\n"
            f"- `{task.func}` swallows `OSError` and returns an empty list, which hides real failures.\n"
            f"- {task.test_path} only covers the happy path.\n\n"
            "### Suggestion\n\n"
            f"{task.decision.replace('**', '')}. Want me to implement that?"
        )
    changes = "\n".join(
        f"- `{p}`: " + (rng.choice(["regression tests", "new edge-case tests", "renamed test, clearer assert"])
                        if p.startswith("tests/") else
                        rng.choice(["guard for empty input", "new helper, shorter function", "clearer error message",
                                    "type hints", "streaming instead of buffering", "decode with utf-8-sig"]))
        for p in (task.files or [task.path]))
    ack = f"\n\n{task.constraint.rstrip('.')} — respected: no signature changed." if task.constraint else ""
    return (
        f"Done. {task.title}.\n\n**Changes**\n{changes}\n\n"
        f"`pytest -q`: {passed} passed in {seconds:.2f}s.{ack}"
    )


def _bullets(items: list[str], prefix: str, empty: str) -> str:
    return "\n".join(f"{prefix}{i}" for i in items) if items else empty


def structured_summary(done: list[Task], active: list[Task], *, next_steps: list[str], critical: list[str],
                       with_critical: bool = True) -> str:
    tasks = done + active
    goals = [t.title for t in tasks] or ["Continue the current coding session"]
    constraints = list(dict.fromkeys(t.constraint for t in tasks if t.constraint))
    blocked = [f"{t.title}: {t.errors[-1]}" for t in active if t.status == "blocked" and t.errors]
    decisions = list(dict.fromkeys(t.decision for t in tasks))[-8:]
    out = [
        "## Goal", "\n".join(goals), "",
        "## Constraints & Preferences", _bullets(constraints, "- ", "- (none)"), "",
        "## Progress", "### Done", _bullets([t.title for t in done], "- [x] ", "- (none)"), "",
        "### In Progress", _bullets([t.title for t in active if t.status != "blocked"], "- [ ] ", "- (none)"), "",
        "### Blocked", _bullets(blocked, "- ", "- (none)"), "",
        "## Key Decisions", _bullets(decisions, "- ", "- (none)"), "",
        "## Next Steps", "\n".join(f"{i}. {s}" for i, s in enumerate(next_steps or ["Wait for the next request"], 1)),
    ]
    if with_critical:
        out += ["", "## Critical Context", _bullets(critical, "- ", "- (none)")]
    return "\n".join(out)


def turn_prefix_summary(task: Task, early: list[str]) -> str:
    return "\n".join([
        "## Original Request", task.request, "",
        "## Early Progress", _bullets(early, "- ", "- (nothing yet)"), "",
        "## Context for Suffix", f"- Working on `{task.func}` in {task.path}; tests live in {task.test_path}",
    ])


SPLIT_TURN_SEPARATOR = "\n\n---\n\n**Turn Context (split turn):**\n\n"
BRANCH_PREAMBLE = (
    "The user wandered off onto another branch of this conversation and has now returned here.\n"
    "What happened on that other branch, in short:\n\n"
)


def file_tags(read: list[str], modified: list[str]) -> str:
    sections = []
    if read:
        sections.append("<read-files>\n" + "\n".join(read) + "\n</read-files>")
    if modified:
        sections.append("<modified-files>\n" + "\n".join(modified) + "\n</modified-files>")
    return "\n\n" + "\n\n".join(sections) if sections else ""


CUSTOM_MESSAGES = (
    ("ci-status", "CI on main is red: 2 failing jobs (lint, tests-py3.12). The last green run was 3 commits ago."),
    ("reminder", "Reminder from the team lead: the release branch is frozen on Friday; keep changes small."),
    ("lint-report", "ruff reported 4 new warnings since the session started (F401 ×3, E501 ×1)."),
    ("review-note", "Reviewer comment on PR #482: «please add a test for the empty-file case» 🙏"),
)
LABELS = ("before refactor", "tests green ✅", "checkpoint", "good state", "try-2", "pre-release", "bug reproduced 🐛")
