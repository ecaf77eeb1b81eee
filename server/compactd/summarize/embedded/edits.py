"""What an edit changed and what a written file is, read from the tool call's own arguments.

An edit (oldText → newText) is described by the names it adds, removes or renames — functions,
types, doc headings, config keys, command-line flags, environment variables — and one line of what
the new text says. A write is described by what the file announces about itself: its first heading
or docstring, and the names it exports.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from . import reads
from .text import clip, joined

# Definitions in the common languages: def/class (Python), function/class/interface/type/enum/const
# (JS/TS), func/type (Go), fn/struct/enum/trait/impl (Rust), plus `name = (...) =>` arrow functions.
_DEF = re.compile(
    r"^\s*(?:export\s+)?(?:default\s+)?(?:pub(?:\([\w:]+\))?\s+)?(?:async\s+)?(?:static\s+)?"
    r"(defmodule|defp?|class|function\*?|interface|type|enum|struct|trait|fn|func(?:\s*\([^)]*\))?|const|let|var|impl)"
    r"\s+([A-Za-z_$][\w$]*(?:\.[A-Z][\w$]*)*)",
    re.MULTILINE,
)
_METHOD = re.compile(r"^\s{2,}(?:public |private |protected |static |async )*([a-z_$][\w$]*)\s*\([^)]*\)\s*(?::[^{]+)?\{",
                     re.MULTILINE)  # an indented method definition in a class body
_HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*$", re.MULTILINE)  # Markdown headings
_FLAG = re.compile(r"(?<![\w-])--[a-z][\w-]{2,}")  # command-line flags
_ENV = re.compile(r"\b[A-Z][A-Z0-9]*_[A-Z0-9_]{2,}\b")  # ENVIRONMENT_VARIABLES
_KEY = re.compile(r"^\s*[\"']?([A-Za-z_][\w.-]*)[\"']?\s*[:=]\s*\S", re.MULTILINE)  # config keys
_CONFIG_EXT = (".json", ".toml", ".yaml", ".yml", ".ini", ".cfg", ".env")
_DOC_EXT = (".md", ".mdx", ".rst", ".txt", ".adoc")
_COMMENT = re.compile(r"^\s*(?:#|//[/!]?|/\*+|\*|\"\"\"|''')\s*(.*?)\s*(?:\*/|\"\"\"|''')?\s*$")
_KEYWORDS = {"if", "for", "while", "switch", "return", "catch", "function", "constructor"}


@dataclass
class Change:
    """The accumulated change one file went through in this part of the conversation."""

    path: str
    verb: str  # "Edited" or "Wrote"
    count: int = 0
    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    withdrawn: list[str] = field(default_factory=list)  # added by one edit, removed again by a later one
    renamed: list[tuple[str, str]] = field(default_factory=list)
    says: str = ""  # one line of what the new text says
    about: str = ""  # for a write: its heading or docstring
    exports: list[str] = field(default_factory=list)
    outline: list[str] = field(default_factory=list)  # for a written document: its section headings
    lead: str = ""  # for a written document: its first line of prose
    digest: list[str] = field(default_factory=list)  # for a written document: what each section says

    def line(self, show: Callable[[str], str] = str) -> str:
        head = f"{self.verb} {show(self.path)}" + (f" (×{self.count})" if self.count > 1 else "")
        parts = []
        if self.about:
            parts.append(f"“{self.about}”")
        if self.lead:
            parts.append(f"says “{self.lead}”")
        if self.outline:
            parts.append("sections " + ", ".join(self.outline[:8]))
        if self.exports:
            parts.append("defines " + ", ".join(self.exports[:8]))
        if self.added:
            parts.append("added " + ", ".join(self.added[:8]))
        if self.renamed:
            parts.append("renamed " + ", ".join(f"{a} → {b}" for a, b in self.renamed[:4]))
        if self.removed:
            parts.append("removed " + ", ".join(self.removed[:6]))
        if self.withdrawn:
            parts.append("added then removed again " + ", ".join(self.withdrawn[:4]))
        if self.says and not self.about:  # a line of code is shown as code, prose in quotes
            parts.append(f"now has {self.says}" if self.says.startswith("`") else f"now says “{self.says}”")
        return head + (": " + "; ".join(parts) if parts else "")


def _names(text: str, path: str) -> list[str]:
    """The names a text defines or documents, in order, each once, shown as they are written."""
    out: list[str] = []
    ext = path.lower()
    if ext.endswith(_DOC_EXT):
        out += [f"“{h.strip('*` ')}”" for h in _HEADING.findall(_blank_fences(text))]
    else:
        for m in _DEF.finditer(text):
            kind, name = m.group(1)[:4].rstrip("*"), m.group(2)
            if kind in ("cons", "let", "var") and m.group(0)[:1].isspace():
                continue  # an indented variable is a local, not something the file defines
            out.append(name + "()" if kind in ("def", "defp", "func", "fn") else name)
        out += [m + "()" for m in _METHOD.findall(text) if m not in _KEYWORDS]
        if ext.endswith(_CONFIG_EXT):
            out += [f"`{k}`" for k in _KEY.findall(text)]
    out += [f"`{f}`" for f in _FLAG.findall(text)]
    out += [f"`{e}`" for e in _ENV.findall(text)]
    return list(dict.fromkeys(out))


def _new_line(old: str, new: str, path: str) -> str:
    """One line of what the new text says: the first added prose or comment line, else the first
    added line of code."""
    old_lines = {ln.strip() for ln in old.splitlines()}
    added = [ln.strip() for ln in new.splitlines() if ln.strip() and ln.strip() not in old_lines]
    if not added:
        return ""
    if path.lower().endswith(_DOC_EXT):
        prose = [ln for ln in added if re.search(r"[A-Za-z]{3,}.*\s.*[A-Za-z]{3,}", ln) and not ln.startswith("#")]
        return clip(re.sub(r"^[-*>\d.)\s]+", "", prose[0]), 160) if prose else ""
    if path.lower().endswith(_CONFIG_EXT):  # a setting or a dependency: the added lines themselves
        return clip(" ".join(added[:2]), 160)
    for ln in added:  # code: the first comment or docstring that explains it
        m = _COMMENT.match(ln)
        if m and len(m.group(1).split()) >= 3:
            return clip(m.group(1), 160)
    for ln in added:  # else the first added statement (not a brace, an import or a definition named above)
        if len(ln) >= 16 and re.search(r"[A-Za-z_]{3,}", ln) and not _DEF.match(ln) and not _METHOD.match("  " + ln) \
                and not re.match(r"^(?:import|from|use|#include|using|package)\b", ln):
            return "`" + clip(" ".join(ln.replace("`", "'").split()), 100) + "`"
    return ""


def describe_edit(change: Change, old: str, new: str) -> None:
    """Fold one oldText → newText replacement into the file's change."""
    change.count += 1
    before, after = _names(old, change.path), _names(new, change.path)
    added = [n for n in after if n not in before]
    removed = [n for n in before if n not in after]
    if len(added) == 1 and len(removed) == 1:  # one name out, one in: a rename
        change.renamed.append((removed[0], added[0]))
        added, removed = [], []
    tests = [n for n in added if re.match(r"(?:test_?|Test)\w", n)]
    if len(tests) > 2:  # many new tests: their number says enough
        added = [n for n in added if n not in tests] + [f"{len(tests)} tests"]
    for n in added:
        if n in change.withdrawn:
            change.withdrawn.remove(n)
        if n in change.removed:
            change.removed.remove(n)
        elif n not in change.added:
            change.added.append(n)
    for n in removed:
        if n in change.added:
            change.added.remove(n)
            if not n.startswith("“"):  # code names; a document's headings come and go as it is reworded
                change.withdrawn.append(n)
        elif n not in change.removed:
            change.removed.append(n)
    said = _new_line(old, new, change.path)
    if said and not (said.startswith("`") and change.says and not change.says.startswith("`")):
        change.says = said  # a later comment or doc line wins; a bare statement does not replace one


def describe_write(change: Change, content: str) -> None:
    """What a newly written file is: its title or docstring, and what it defines."""
    change.count += 1
    change.about = _title(content, change.path)
    names = [n for n in _names(content, change.path) if not n.startswith("“")]
    tests = [n for n in names if re.match(r"(?:test_?|Test)\w", n)]
    rest = [n for n in names if n not in tests]
    change.exports = rest[:6] + ([f"{len(tests)} tests"] if tests else []) or change.exports
    if change.path.lower().endswith(_DOC_EXT):  # a document: its outline and what it opens by saying
        change.outline, change.lead = _outline(content), _lead(content)
        change.digest = _digest(content)


_LEVELED = re.compile(r"^(#{1,6})\s+(.+?)\s*#*$", re.MULTILINE)


def _outline(content: str) -> list[str]:
    """A document's top sections: the distinct headings of the shallowest level below its title."""
    heads = [(len(m.group(1)), m.group(2).strip("*` ")) for m in _LEVELED.finditer(_blank_fences(content))]
    if heads and heads[0][0] == min(level for level, _ in heads) and sum(lv == heads[0][0] for lv, _ in heads) == 1:
        heads = heads[1:]  # the title
    if not heads:
        return []
    top = min(level for level, _ in heads)
    return list(dict.fromkeys(f"“{clip(h, 60)}”" for level, h in heads if level == top))


def _digest(content: str, limit: int = 14) -> list[str]:
    """What each top section of a written document says: '“heading”: its first sentence of prose',
    with the first items of the list that sentence introduces (a document written for the user is
    the substance of the work; its sections are where that substance is)."""
    heads = [(len(m.group(1)), m.group(2).strip("*` "), m.start(), m.end()) for m in _LEVELED.finditer(_blank_fences(content))]
    if len(heads) < 3:
        return []
    if sum(h[0] == heads[0][0] for h in heads) == 1:  # the title
        heads = heads[1:]
    top = min(h[0] for h in heads)
    out = []
    for i, (level, title, _, end) in enumerate(heads):
        if level != top:
            continue
        nxt = next((h[2] for h in heads[i + 1:] if h[0] <= top), len(content))
        said = _section_gist(content[end:nxt])
        if said:
            out.append(f"“{clip(title, 60)}”: {said}")
        elif out and out[-1].startswith("other sections: "):  # diagrams, code, tables: named only
            out[-1] += f", “{clip(title, 60)}”"
        else:
            out.append(f"other sections: “{clip(title, 60)}”")
    return out[:limit]


def _section_gist(body: str) -> str:
    lines = [ln for ln in unfenced(body) if not ln.startswith(("#", "|"))]
    for i, line in enumerate(lines):
        plain = _EMPHASIS.sub("", re.sub(r"^[-*>\d.)\s]+", "", line)).strip()
        if len(plain.split()) < 4:
            continue
        listed = [_EMPHASIS.sub("", re.sub(r"^[-*\d.)\s]+", "", x)).strip().rstrip(";,") for x in lines[i:i + 4]
                  if re.match(r"^(?:[-*+]|\d+[.)])\s", x)]
        if plain.endswith(":"):  # a lead-in: its first items say what it introduces
            plain = plain + " " + joined(listed[1:] if _LISTED.match(line) else listed) if listed else plain
        elif _LISTED.match(line):  # a section that is a list: its first items
            plain = joined(listed[:3])
        return clip(plain, 200)
    return ""


_LISTED = re.compile(r"^(?:[-*+]|\d+[.)])\s")


_EMPHASIS = re.compile(r"\*\*|__(?=\w)|(?<=\w)__|(?<![\w*])\*(?=\w)|(?<=\w)\*(?![\w*])")


def _lead(content: str) -> str:
    """A document's first sentence of prose (six words or more; not a heading, a table, code or a date line)."""
    for line in unfenced(content):
        plain = re.sub(r"[*_`]", "", re.sub(r"^[-*>\d.)\s]+", "", line)).strip()
        if line.startswith(("#", "|")) or len(plain.split()) < 6:
            continue
        return clip(plain, 200)
    return ""


def _blank_fences(content: str) -> str:
    """The text with its fenced code blocks blanked (same length, so positions hold): a `# comment`
    in a shell block is not a heading."""
    return re.sub(r"^[ \t]*```.*?(?:^[ \t]*```[^\n]*$|\Z)", lambda m: re.sub(r"[^\n]", " ", m.group(0)), content,
                  flags=re.MULTILINE | re.DOTALL)


def unfenced(content: str) -> list[str]:
    out, fenced = [], False
    for line in content.splitlines():
        s = line.strip()
        if s.startswith("```"):
            fenced = not fenced
        elif not fenced and s:
            out.append(s)
    return out


def _title(content: str, path: str) -> str:
    """The first heading of a document, or the first docstring / leading comment of code."""
    if path.lower().endswith(_DOC_EXT):
        m = _HEADING.search(content)
        return clip(m.group(1), 120) if m else clip(next((ln for ln in content.splitlines() if ln.strip()), ""), 120)
    lines = content.splitlines()[:15]
    for i, ln in enumerate(lines):
        s = ln.strip()
        if s.startswith("@moduledoc"):  # Elixir: the docstring follows (inline or on the next line)
            doc = s.removeprefix("@moduledoc").strip().strip('"').strip() or next(
                (x.strip() for x in lines[i + 1:] if x.strip()), "")
            if doc and doc != "false" and len(doc.split()) >= 3:
                return clip(doc.strip('"'), 140)
            continue
        if re.match(r"(?:defmodule|module|namespace)\b", s):
            continue
        if not s or s.startswith("#!") or s.startswith("package ") or s.startswith("import ") or s == '"""':
            continue
        m = _COMMENT.match(s)
        if m and len(m.group(1).split()) >= 3:
            return clip(m.group(1), 140)
        if s.startswith("//") or s.startswith("#"):
            continue
        break
    return ""


_LINE_NUMBER = re.compile(r"^\s*\d+(?:→|\t)", re.MULTILINE)  # `cat -n` style numbers some read tools add


def describe_read(path: str, output: str) -> str:
    """What a file that was read is: its title or docstring, what it defines, builds on and routes, or
    for a configuration file what it sets ('' when nothing)."""
    content = _LINE_NUMBER.sub("", output[:6000])  # what a file is shows at its top
    about = _title(content, path)
    parts = [f"“{about}”"] if about else []
    if reads.is_config(path) and not path.lower().endswith(_DOC_EXT):
        sets = reads.settings(content)
        return "; ".join(parts + ([f"sets {sets}"] if sets else []))
    names = [n for n in _names(content, path) if not n.startswith("“")][:8]
    parts += ["defines " + ", ".join(names)] if names else []
    built_on = reads.uses(content)
    parts += ["uses " + ", ".join(built_on)] if built_on else []
    mapped = reads.routes(content)
    parts += ["routes " + ", ".join(mapped)] if mapped else []
    return "; ".join(parts)
