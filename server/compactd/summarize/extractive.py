"""Embedded extractive summarizer: no network, deterministic, the default backend.

It does not write prose; it *selects* evidence (the pipeline in summarize.embedded) from the conversation — the
convertToLlm messages in `request.messages` — and files it under the exact headings of the
structured formats:

- HISTORY (Q-2): Goal, Constraints & Preferences, Progress (Done / In Progress / Blocked),
  Key Decisions, Next Steps, Critical Context.
- BRANCH (Q-7): the same without Critical Context.
- TURN_PREFIX (Q-6): Original Request, Early Progress, Context for Suffix.

What goes where:
- Goal: the user's task requests (pasted material, acknowledgements, questions asked in passing,
  corrections and interruptions are not goals), earlier goals first;
- Constraints: the user's rules (must / never / don't / only / keep ...), earlier ones kept;
- Done: edits and writes, commits with their messages, renames and deletions (`Renamed a → b`,
  `Deleted c`), errors that a later run resolved (`Fixed: <exact error>`), checks that pass, other
  commands that changed something; read-only commands and interruptions are not progress;
- In Progress: the open task when the conversation stops mid-work, the user's last correction
  of it, uncommitted changes, calls still waiting for a result;
- Blocked: errors nothing resolved later, verbatim;
- Key Decisions: the assistant's stated choices, the ones the user rejected marked as rejected,
  the user's corrections and directions quoted word for word, the approach adopted after them;
- Next Steps: from the last open work — finish the open task, re-run the check that last ran
  before the latest edits, commit uncommitted changes, fix open errors; when the conversation
  ended with an answer, the next steps it offered; else the earlier ones;
- Critical Context: error lines the user quoted, open errors, findings, programs not installed,
  files changed (current names, deleted files left out), renames and deletions, what files read and
  short listings showed (when there is room), then names mentioned (dropped first).
- User Messages (optional, last; not one of the required headings): every message the user wrote,
  condensed to its asks, rules and reasons in their own words.

Harness markup is read as what it is (summarize.embedded.markup): injected reminders are never the
user's words; slash commands, the user's own shell commands, interruptions; a call the user declined
at the permission prompt is a rejection. The agent's task list, an approved plan, the user's answers
to the agent's questions and a sub-agent's report are used as such.

Update mode (`previous_summary`, or summaries embedded in the conversation as `<summary>` blocks):
every section of the previous summary is carried forward and merged — also from summaries in
other layouts (Pi's own: "User Preferences", "Completed Work", "Remaining Work", ...), whose
headings are mapped by keyword; sections with no counterpart go to Critical Context under their
own title. Previous In Progress items that share a path or command with new work move to Done
(all of them when the user has moved on to new tasks); a new open step replaces Next Steps.
File-operation tags in the previous text are ignored (code appends them).

Empty sections read `(none)`. The output is kept within `request.max_tokens` (at most ~2000 tokens)
estimated as ceil(UTF-16 chars / 4): names mentioned and file lists go first, then the content
sections give up lines in proportion to their size (plain commands and recap sentences before
edits and fixes; the user's questions before their rules and corrections); headings are never
dropped. The text is streamed to `on_text` one
section at a time. `custom_instructions` cannot steer an extractive summary and are ignored.
Usage is None (no model was called).

If `request.messages` is empty the serialized `<conversation>` inside `request.prompt` is parsed
instead (best effort), and `<previous-summary>` is taken from the prompt when not given.
"""

from __future__ import annotations

import asyncio
import re

from ..compaction.prompts import BRANCH_SUMMARY_HEADINGS, SUMMARY_HEADINGS, TURN_PREFIX_HEADINGS
from .base import OnText, SummaryRequest, SummaryResult
from .embedded import extract_summary

__all__ = [
    "ExtractiveSummarizer",
    "extract_summary",
    "HISTORY_HEADINGS",
    "BRANCH_HEADINGS",
    "TURN_PREFIX_HEADINGS",
]

# One definition of the required headings, shared with the prompts and the D-23 check.
HISTORY_HEADINGS = SUMMARY_HEADINGS
BRANCH_HEADINGS = BRANCH_SUMMARY_HEADINGS


class ExtractiveSummarizer:
    name = "extractive"

    def __repr__(self) -> str:
        return "ExtractiveSummarizer()"

    async def summarize(self, request: SummaryRequest, on_text: OnText | None = None) -> SummaryResult:
        text = extract_summary(request)
        if on_text is not None:
            # One chunk per top-level section; yield between chunks so cancellation can land.
            pieces = re.split(r"(?=\n\n## )", text)
            for piece in pieces:
                on_text(piece)
                await asyncio.sleep(0)
        else:
            await asyncio.sleep(0)
        return SummaryResult(text=text, usage=None)
