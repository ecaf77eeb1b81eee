"""What a file the agent read shows beyond its title and definitions — in an exploration or a review,
the substance is what was read: the settings a configuration file sets, the routes a router maps,
the modules and packages a file builds on."""

from __future__ import annotations

import json
import re
from typing import Any

from .text import clip

# Configuration by place or name: a config/ or settings/ directory, `*.config.*`, or a config format.
_CONFIG_PATH = re.compile(r"(?:^|/)(?:config|conf|settings)(?:/|\.[a-z]+$)|\.config\.\w+$"
                          r"|\.(?:json|toml|ya?ml|ini|cfg|env|conf|properties)$", re.IGNORECASE)
# Lines of a config file that set nothing: comments, imports, block ends, lone brackets.
_NO_SETTING = re.compile(r"^(?:#|//|--|;|%|/\*|\*|import\b|require\b|end$|[\[\]{}(),]+$)")
_LONG_STRING = re.compile(r"(\"|')([^\"'\n]{40,})\1")
# A route: a call whose first argument is a URL path and whose second names what serves it
# (`get "/users", UserController`, `live "/", HomeLive`, `app.get('/health', health)`).
# A block opened on the same line (`scope "/", App do`) groups routes; it is not one.
_ROUTE = re.compile(r"""^\s*(?:[\w.]+\.)?[a-z_]\w*\s*\(?\s*["'](/[^"'\s]*)["']\s*,\s*([A-Za-z_][\w.:]*)(?!.*\bdo\s*$)""",
                    re.MULTILINE)
# What a file builds on: `use Mod` (Elixir), imports of packages (JS/TS, not relative ones),
# `require("pkg")`, Python's `import pkg` / `from pkg import`.
_USES = re.compile(
    r"""^\s*use\s+([A-Z][\w.]*)"""
    r"""|^\s*import\s+(?:[^'"\n]*?\s+from\s+)?["']([^./"'][^"']*)["']"""
    r"""|\brequire\(\s*["']([^./"'][^"']*)["']\s*\)"""
    r"""|^(?:from\s+([A-Za-z_][\w.]*)\s+import|import\s+([A-Za-z_][\w.]*))""",
    re.MULTILINE,
)


def is_config(path: str) -> bool:
    return bool(_CONFIG_PATH.search(path))


def settings(content: str, limit: int = 360) -> str:
    """What a configuration file sets, its statements in one line (long string values elided)."""
    kept = []
    for line in content.splitlines():
        s = line.strip()
        if not s or _NO_SETTING.match(s):
            continue
        kept.append(_LONG_STRING.sub(r"\1…\1", s))
    return clip(" ".join(" ".join(kept).split()), limit)


def routes(content: str, limit: int = 8) -> list[str]:
    """'path → handler' for each route a file maps."""
    found = [f"{path} → {target}" for path, target in _ROUTE.findall(content)]
    return list(dict.fromkeys(found))[:limit]


def uses(content: str, limit: int = 6) -> list[str]:
    """The modules and packages a file builds on, in order, each once."""
    candidates = "\n".join(ln for ln in content.splitlines() if "use " in ln or "import" in ln or "require(" in ln)
    found = [next(g for g in m.groups() if g) for m in _USES.finditer(candidates)]
    return list(dict.fromkeys(found))[:limit]


# A value that names nothing a reader can use: an opaque id, a hash, a token.
_OPAQUE = re.compile(r"^[A-Za-z0-9+/=_-]{20,}$")


def json_fields(output: str, limit: int = 400) -> str:
    """A command's JSON output as 'key: value' for its scalar fields (nested keys dotted, the first
    items of lists, opaque ids left out); '' when the output is not JSON."""
    text = output.strip()
    if not text.startswith(("{", "[")) or len(text) > 100_000:  # a big dump is not a record to quote
        return ""
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return ""
    out: list[str] = []
    size = [0]

    def walk(value: Any, key: str, depth: int = 0) -> None:
        if size[0] > limit or depth > 20:  # enough to fill the line; deeper nesting is not read
            return
        if isinstance(value, dict):
            for k, v in value.items():
                walk(v, f"{key}.{k}" if key else str(k), depth + 1)
        elif isinstance(value, list):
            for v in value[:3]:
                walk(v, key, depth + 1)
        elif value not in (None, "", False) and not (isinstance(value, str) and _OPAQUE.match(value)):
            out.append(f"{key}: {clip(str(value), 120)}" if key else clip(str(value), 120))
            size[0] += len(out[-1]) + 2

    walk(data, "")
    return clip("; ".join(out), limit)


_DIFF_FILE = re.compile(r"^diff --git a/(\S+) b/(\S+)", re.MULTILINE)
_ADDED_COMMENT = re.compile(r"^\+\s*(?://|#|/\*|\*|--)\s*(.{12,}?)\s*(?:\*/)?$", re.MULTILINE)
_QUOTED = re.compile(r"""(["'`])([A-Za-z-](?:(?!\1)[^\n])*)\1""")


def diff_digest(output: str, limit: int = 600) -> str:
    """What a unified diff that was shown changes: per file its added and removed line counts, the
    comments it adds and the messages (string literals of four words or more) it adds."""
    files = list(_DIFF_FILE.finditer(output))
    if not files:
        return ""
    parts = []
    for i, m in enumerate(files[:6]):  # the first files say enough; the rest are counted
        body = output[m.end():files[i + 1].start() if i + 1 < len(files) else len(output)]
        added = len(re.findall(r"^\+(?!\+\+ )", body, re.MULTILINE))
        removed = len(re.findall(r"^-(?!-- )", body, re.MULTILINE))
        part = f"{m.group(2)} (+{added}/-{removed})"
        comments = list(dict.fromkeys(c.strip() for c in _ADDED_COMMENT.findall(body)))[:4]
        added_lines = [ln for ln in body.splitlines() if ln.startswith("+") and not ln.startswith("+++")]
        messages = list(dict.fromkeys(q for ln in added_lines for _, q in _QUOTED.findall(ln) if len(q.split()) >= 4))[:4]
        if comments:
            part += ": comments " + ", ".join(f"“{clip(c, 100)}”" for c in comments)
        if messages:
            part += ("; " if comments else ": ") + "messages " + ", ".join(f"“{clip(x, 120)}”" for x in messages)
        parts.append(part)
    return clip("; ".join(parts) + (f" (+{len(files) - 6} files)" if len(files) > 6 else ""), limit)
