"""The embedded (offline, extractive) summarizer as a pipeline:

1. extract (facts.py, with dialog.py, layout.py, replies.py, edits.py, tools.py, outcomes.py): one pass over the messages
   collects what the user asked and ruled, what the assistant said, what every tool call did;
2. resolve (resolve.py): later evidence overrides earlier — errors fixed later, rejections of things
   carried out anyway; previous summaries are parsed (previous.py) to be carried forward;
3. render (sections.py, render.py): facts under the exact headings, within the token budget.

It selects and condenses; it never invents. Deterministic and offline.
"""

from __future__ import annotations

import re

from ..base import SummaryKind, SummaryRequest
from .facts import collect
from .previous import parse_summary
from .prompt_text import messages_from_prompt
from .render import fit
from .sections import build

__all__ = ["extract_summary", "SOFT_BUDGET"]

# However large the budget, a summary stays at most ~8k characters (a model-written one of a long
# region is 3-6k). What goes first when it is tight: render.fit. Measured on the development regions
# (387 probes, 2026-12-03): 2000 tokens answer 352, 1750 answer 343, 1500 326, 1250 (~5k chars) 314 —
# an extractive summary needs more room than a model's for the same substance.
SOFT_BUDGET = 2000


def extract_summary(request: SummaryRequest) -> str:
    """The complete extractive summary for a request (pure, deterministic)."""
    messages = request.messages or messages_from_prompt(request.prompt)
    previous_text = request.previous_summary
    if previous_text is None:
        pm = re.search(r"<previous-summary>\n(.*?)\n</previous-summary>", request.prompt, re.DOTALL)
        previous_text = pm.group(1) if pm else None
    facts = collect(messages)
    previous = [parse_summary(t) for t in facts.embedded]
    if previous_text and request.kind != SummaryKind.TURN_PREFIX:
        previous.append(parse_summary(previous_text))
    lines = build(request.kind, facts, previous)
    budget = min(request.max_tokens, SOFT_BUDGET) if request.max_tokens > 0 else SOFT_BUDGET
    return fit(request.kind, lines.items, budget)
