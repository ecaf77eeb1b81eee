"""Findings the assistant marks by layout rather than by wording: a statement under a bold label
("**Root cause**: …", "🐛 **Bug found**: …", "**Note:** …"). Layout carries across languages and
writing styles where keyword patterns do not."""

from __future__ import annotations

import re

from .text import clip, unfenced_lines

# A line that opens with a short bold label (an emoji or a list marker may come first), the colon
# inside or just after the bold, then the statement.
_LABELLED = re.compile(r"^(?:[-*+]\s+|\d+[.)]\s+)?(?:[^\w\s*`]{1,3}\s*)?\*\*([^*\n]{2,40}?)(?::\*\*|\*\*\s*[:：])\s*(.+)$")


def labelled(text: str, limit: int = 4) -> list[str]:
    """'Label: statement' for each statement under a bold label that says something (six words or
    more, or a sentence of CJK text); a label alone (a heading of what follows) is not one."""
    out = []
    for line in unfenced_lines(text):
        m = _LABELLED.match(line)
        if not m:
            continue
        label, said = m.group(1).strip(), m.group(2).strip()
        words = len(re.findall(r"[^\W\d_]{2,}", said)) + len(re.findall(r"[\u3040-\u30ff\u3400-\u9fff]", said)) // 4
        if words >= 6 and not said.endswith(":"):
            out.append(clip(f"{label}: {said.replace('**', '')}", 300))
    return out[:limit]
