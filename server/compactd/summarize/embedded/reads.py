"""What a file the agent read shows beyond its title and definitions — in an exploration or a review,
the substance is what was read: the settings a configuration file sets, the routes a router maps,
the modules and packages a file builds on."""

from __future__ import annotations

import re

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
    found = [next(g for g in m.groups() if g) for m in _USES.finditer(content)]
    return list(dict.fromkeys(found))[:limit]
