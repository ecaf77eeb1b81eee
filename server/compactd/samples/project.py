"""A synthetic Python project that generated sessions "work on".

Files are synthesized lazily and deterministically: each file gets its own RNG derived from the
project seed and its path (crc32, never `hash()`, which is salted per process), so the order in
which the session touches files never changes their content. Edits and writes update an in-memory
copy, so a later `read` shows the edited text, as in a real session.
"""

from __future__ import annotations

import random
import re
import zlib
from dataclasses import dataclass, field

PACKAGES = (
    "ledgerline", "tidepool", "quillmark", "harborctl", "emberstore", "fernlog", "saltbox", "orchardql",
)

# module path (relative to src/<pkg>/) -> domain nouns used for its identifiers
MODULES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("cli.py", ("command", "option", "flag", "args", "output")),
    ("config.py", ("config", "profile", "setting", "env", "default")),
    ("models.py", ("record", "entry", "account", "amount", "currency")),
    ("parser.py", ("row", "header", "field", "line", "delimiter")),
    ("errors.py", ("error", "context", "location", "message")),
    ("storage/sqlite_backend.py", ("connection", "table", "row", "cursor", "migration")),
    ("storage/cache.py", ("cache", "key", "entry", "ttl", "snapshot")),
    ("storage/migrations.py", ("migration", "version", "schema", "column")),
    ("http/client.py", ("request", "response", "session", "header", "payload")),
    ("http/retry.py", ("attempt", "delay", "backoff", "jitter", "deadline")),
    ("export/csv_writer.py", ("row", "column", "header", "dialect", "encoding")),
    ("export/json_writer.py", ("document", "record", "stream", "indent")),
    ("utils/timefmt.py", ("timestamp", "timezone", "duration", "interval")),
    ("utils/text.py", ("text", "token", "slug", "width", "accent")),
    ("plugins/registry.py", ("plugin", "hook", "registry", "handler")),
    ("scheduler.py", ("job", "queue", "worker", "tick", "deadline")),
    ("reporting.py", ("report", "summary", "total", "period", "chart")),
    ("sync.py", ("remote", "batch", "cursor", "checkpoint", "conflict")),
)

VERBS = (
    "parse", "load", "save", "fetch", "build", "render", "validate", "normalize", "merge", "split",
    "resolve", "encode", "decode", "flush", "register", "dispatch", "collect", "apply", "format",
    "compute", "refresh", "sync", "export", "scan", "filter", "group", "iter", "read", "write", "check",
)
LOCALS = (
    "value", "result", "items", "row", "record", "payload", "chunk", "attempt", "delay", "text",
    "header", "fields", "key", "entry", "batch", "limit", "offset", "cursor", "name", "parts", "count",
)
TYPES = ("str", "int", "float", "bool", "bytes", "list[str]", "dict[str, Any]", "Path", "str | None")
EXCEPTIONS = ("ValueError", "KeyError", "TypeError", "OSError", "RuntimeError", "UnicodeDecodeError")
TEST_CASES = (
    "empty_input", "unicode_header", "trailing_comma", "large_batch", "none_values", "roundtrip",
    "retry_exhausted", "invalid_config", "default_values", "nested_keys", "quoted_delimiter",
    "timezone_offset", "missing_column", "duplicate_keys", "bom_prefix",
)


@dataclass
class SourceFile:
    path: str
    text: str
    functions: list[str] = field(default_factory=list)
    classes: list[str] = field(default_factory=list)


def _ident(rng: random.Random, nouns: tuple[str, ...]) -> str:
    return f"{rng.choice(VERBS)}_{rng.choice(nouns)}"


def _camel(word: str) -> str:
    return "".join(p.capitalize() for p in word.split("_"))


class _CodeWriter:
    """Emits plausible Python: imports, dataclasses, functions with varied bodies."""

    def __init__(self, rng: random.Random, pkg: str, nouns: tuple[str, ...]) -> None:
        self.rng = rng
        self.pkg = pkg
        self.nouns = nouns
        self.lines: list[str] = []
        self.functions: list[str] = []
        self.classes: list[str] = []

    def header(self, module: str) -> None:
        r = self.rng
        self.lines += [
            f'"""{_camel(r.choice(self.nouns))} handling for {self.pkg}.{module.removesuffix(".py").replace("/", ".")}."""',
            "",
            "from __future__ import annotations",
            "",
        ]
        std = sorted(r.sample(["json", "logging", "os", "re", "time", "csv", "io", "itertools",
                               "functools", "hashlib", "sqlite3", "random"], 4))
        self.lines += [f"import {m}" for m in std]
        self.lines += [
            "from dataclasses import dataclass, field",
            "from pathlib import Path",
            "from typing import Any, Iterable, Iterator",
            "",
            f"from {self.pkg}.errors import {_camel(r.choice(self.nouns))}Error",
            "",
            "logger = logging.getLogger(__name__)",
            "",
            f"DEFAULT_{r.choice(self.nouns).upper()}_LIMIT = {r.choice([16, 64, 128, 500, 1000, 4096])}",
            f"_{r.choice(self.nouns).upper()}_PATTERN = re.compile(r\"^[\\w.-]+$\")",
            "",
        ]

    def dataclass(self) -> None:
        r = self.rng
        name = _camel(r.choice(self.nouns)) + r.choice(["", "Spec", "Info", "State", "Options"])
        if name in self.classes:
            return
        self.classes.append(name)
        self.lines += ["", "@dataclass(frozen=True)", f"class {name}:",
                       f'    """One {name.lower()} as seen by the {r.choice(self.nouns)} layer."""', ""]
        for fld in r.sample(LOCALS, r.randint(2, 5)):
            self.lines.append(f"    {fld}: {r.choice(TYPES)}")
        if r.random() < 0.5:
            self.lines.append("    tags: list[str] = field(default_factory=list)")
        self.lines += ["", "    def is_empty(self) -> bool:",
                       f"        return not self.{r.choice(['tags', 'name', 'items', 'value'])}", ""]

    def function(self) -> None:
        r = self.rng
        name = _ident(r, self.nouns)
        if name in self.functions:
            name = f"{name}_{r.choice(['safe', 'fast', 'all', 'once', 'batched'])}"
            if name in self.functions:  # names exhausted: number them so generation always progresses
                name = f"{name}_{len(self.functions)}"
        self.functions.append(name)
        params = r.sample(LOCALS, r.randint(1, 3))
        sig = ", ".join(f"{p}: {r.choice(TYPES)}" for p in params)
        if r.random() < 0.4:
            sig += f", *, limit: int = DEFAULT_{r.choice(self.nouns).upper()}_LIMIT"
        ret = r.choice(TYPES)
        how = r.choice(["and return the result", "in place", "lazily", "for the caller"])
        doc = f'    """{name.split("_")[0].capitalize()} the {name.split("_", 1)[1]} {how}."""'
        self.lines += ["", "", f"def {name}({sig}) -> {ret}:", doc]
        blocks = r.randint(2, 6)
        for _ in range(blocks):
            self._block(params)
        self.lines.append(f"    return {r.choice(params + ['result', 'None', 'items'])}")

    def _block(self, params: list[str]) -> None:
        r = self.rng
        p = r.choice(params)
        v = r.choice(LOCALS)
        kind = r.randrange(7)
        if kind == 0:
            err = _camel(r.choice(self.nouns)) + "Error"
            self.lines += [f"    if not {p}:", f'        raise {err}(f"{p} must not be empty (got {{{p}!r}})")']
        elif kind == 1:
            item = r.choice(["item", "row", "part", "entry"])
            self.lines += [
                "    result = []",
                f"    for {item} in {p}:",
                f"        if {item} is None or not str({item}).strip():",
                "            continue",
                f"        result.append({_ident(r, self.nouns)}({item}))",
            ]
        elif kind == 2:
            exc = r.choice(EXCEPTIONS)
            self.lines += [
                "    try:",
                f"        {v} = {_ident(r, self.nouns)}({p})",
                f"    except {exc} as exc:",
                f'        logger.warning("could not {r.choice(VERBS)} {r.choice(self.nouns)} %s: %s", {p}, exc)',
                f"        {v} = {r.choice(['None', '[]', '{}', '0', repr('')])}",
            ]
        elif kind == 3:
            self.lines.append(f"    {v} = str({p}).strip().{r.choice(['lower', 'casefold', 'upper'])}()")
        elif kind == 4:
            k1, k2 = r.sample(self.nouns, 2) if len(self.nouns) > 1 else (self.nouns[0], "value")
            self.lines.append(f'    {v} = {{"{k1}": {p}, "{k2}": {r.choice(LOCALS)}, "ts": time.time()}}')
        elif kind == 5:
            self.lines += [
                f"    for attempt in range({r.choice([3, 5, 8])}):",
                f"        if {_ident(r, self.nouns)}({p}, attempt=attempt):",
                "            break",
                f"        time.sleep(min(2 ** attempt * 0.1, {r.choice([2, 5, 30])}))",
            ]
        else:
            self.lines += [
                f"    with open({p}, encoding=\"utf-8\") as fh:",
                f"        {v} = [line.rstrip(\"\\n\") for line in fh if line.strip()]",
            ]


def synth_module(rng: random.Random, pkg: str, module: str, nouns: tuple[str, ...], target_lines: int) -> SourceFile:
    w = _CodeWriter(rng, pkg, nouns)
    w.header(module)
    while len(w.lines) < target_lines:
        if rng.random() < 0.15:
            w.dataclass()
        else:
            w.function()
    text = "\n".join(w.lines) + "\n"
    return SourceFile(f"src/{pkg}/{module}", text, w.functions, w.classes)


def synth_tests(rng: random.Random, pkg: str, module: str, subject: SourceFile, target_lines: int) -> SourceFile:
    mod = module.removesuffix(".py").replace("/", ".")
    funcs = subject.functions[:] or ["main"]
    lines = ["import pytest", "", f"from {pkg}.{mod} import (",
             *[f"    {f}," for f in sorted(set(funcs[:6]))], ")", ""]
    tests: list[str] = []
    while len(lines) < target_lines:
        f = rng.choice(funcs[:6])
        case = rng.choice(TEST_CASES)
        name = f"test_{f}_{case}"
        if name in tests:
            name = f"{name}_{len(tests)}"  # keeps the loop finite when a module has few functions
        tests.append(name)
        if rng.random() < 0.3:
            lines += ["", "", "@pytest.mark.parametrize(\"raw, expected\", [",
                      "    (\"\", []),", "    (\"a,b\", [\"a\", \"b\"]),",
                      "    (\"Größe,prix (€)\", [\"Größe\", \"prix (€)\"]),", "])",
                      f"def {name}(raw, expected):", f"    assert {f}(raw) == expected"]
        else:
            lines += ["", "", f"def {name}(tmp_path):",
                      f"    source = tmp_path / \"{case}.csv\"",
                      "    source.write_text(\"id,name\\n1,caf\\u00e9\\n\", encoding=\"utf-8\")",
                      f"    result = {f}(source)",
                      "    assert result is not None",
                      f"    assert len(result) == {rng.randint(0, 4)}"]
    return SourceFile(f"tests/test_{module.replace('/', '_')}", "\n".join(lines) + "\n", tests, [])


class Project:
    """The file tree of one generated session, with lazily synthesized contents."""

    def __init__(self, rng: random.Random) -> None:
        self.pkg = rng.choice(PACKAGES)
        self._seed = rng.getrandbits(32)
        chosen = sorted(rng.sample(range(len(MODULES)), rng.randint(10, len(MODULES))))
        self._modules = {f"src/{self.pkg}/{MODULES[i][0]}": MODULES[i] for i in chosen}
        self._tests = {
            f"tests/test_{MODULES[i][0].replace('/', '_')}": f"src/{self.pkg}/{MODULES[i][0]}"
            for i in chosen if rng.random() < 0.7
        }
        self._sizes: dict[str, int] = {}
        for path in self._modules:
            # most files are a few hundred lines; a few are huge, so reads reach tens of KB
            big = rng.random() < 0.18
            self._sizes[path] = rng.randint(900, 2600) if big else rng.randint(60, 420)
        self._files: dict[str, SourceFile] = {}
        self.created: list[str] = []

    @property
    def modules(self) -> list[str]:
        return list(self._modules)

    @property
    def tests(self) -> list[str]:
        return list(self._tests) + [p for p in self.created if p.startswith("tests/")]

    def all_paths(self) -> list[str]:
        return [*self._modules, *self._tests, *self.created]

    def exists(self, path: str) -> bool:
        return path in self._modules or path in self._tests or path in self._files

    def subject_of(self, test_path: str) -> str | None:
        return self._tests.get(test_path)

    def test_for(self, module_path: str) -> str:
        rel = module_path.removeprefix(f"src/{self.pkg}/")
        return f"tests/test_{rel.replace('/', '_')}"

    def file(self, path: str) -> SourceFile:
        f = self._files.get(path)
        if f is None:
            rng = random.Random(self._seed ^ zlib.crc32(path.encode()))
            if path in self._modules:
                module, nouns = self._modules[path]
                f = synth_module(rng, self.pkg, module, nouns, self._sizes[path])
            elif path in self._tests:
                subject_path = self._tests[path]
                module = self._modules[subject_path][0]
                f = synth_tests(rng, self.pkg, module, self.file(subject_path), rng.randint(40, 260))
            else:
                raise KeyError(path)
            self._files[path] = f
        return f

    def functions(self, path: str) -> list[str]:
        return self.file(path).functions or ["main"]

    def write(self, path: str, text: str, functions: list[str]) -> None:
        if path not in self._files and not self.exists(path):
            self.created.append(path)
        self._files[path] = SourceFile(path, text, functions, [])

    def replace(self, path: str, old: str, new: str) -> bool:
        f = self.file(path)
        if old not in f.text:
            return False
        f.text = f.text.replace(old, new, 1)
        return True

    def line_of(self, path: str, needle: str) -> int:
        idx = self.file(path).text.find(needle)
        return 1 if idx < 0 else self.file(path).text.count("\n", 0, idx) + 1

    def grep(self, pattern: str, limit: int = 100) -> list[str]:
        # whole-text multiline search: much faster than testing every line separately
        rx = re.compile(r"^.*" + re.escape(pattern) + r".*$", re.MULTILINE)
        hits: list[str] = []
        for path in self.all_paths():
            text = self.file(path).text
            line, pos = 1, 0
            for m in rx.finditer(text):
                line += text.count("\n", pos, m.start())
                pos = m.start()
                hits.append(f"{path}:{line}:{m.group()}")
                if len(hits) >= limit:
                    return hits
        return hits
