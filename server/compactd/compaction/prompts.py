"""Summarization prompts and prompt assembly (spec §8.1–8.2, §10, §12.3; decision D-8).

The wording is our own. What must match Pi exactly is the structure: section headings, tag names,
separators and marker strings (`<conversation>`, `<previous-summary>`, `<additional-context>`,
`Additional focus: `, the split-turn separator, `No prior history.`, the branch preamble ending
in a blank line, the file tags).

Wrapper escaping: text placed *inside* a wrapper (the serialized conversation, a previous
summary, additional-context lines) could itself contain `</conversation>` or a similar wrapper
tag — a session about this very tool does — and so close the wrapper early or open a new one. In
such text we insert a ZERO WIDTH SPACE (U+200B) right after the `<` of any opening or closing
`conversation`, `previous-summary` or `additional-context` tag (case-insensitive). The text reads
the same, the model no longer sees a tag, our own wrapper stays the only real one, and escaping
is idempotent (an escaped tag no longer matches). Nothing else is touched, and text outside the
wrappers (base prompt, custom instructions) is never changed.
"""

from __future__ import annotations

from collections.abc import Iterable

from .file_ops import format_file_operations
from .serialize import escape_wrapped

__all__ = [
    "SUMMARIZATION_SYSTEM_PROMPT",
    "SUMMARY_PROMPT",
    "UPDATE_SUMMARY_PROMPT",
    "TURN_PREFIX_PROMPT",
    "BRANCH_SUMMARY_PROMPT",
    "BRANCH_SUMMARY_PREAMBLE",
    "SHORT_SUMMARY_PROMPT",
    "NO_PRIOR_HISTORY",
    "SPLIT_TURN_SEPARATOR",
    "NO_BRANCH_CONTENT",
    "NO_SUMMARY_GENERATED",
    "SUMMARY_HEADINGS",
    "TURN_PREFIX_HEADINGS",
    "BRANCH_SUMMARY_HEADINGS",
    "WRAPPER_TAGS",
    "escape_wrapped",
    "wrap_conversation",
    "with_custom_focus",
    "history_base_prompt",
    "build_history_prompt",
    "build_turn_prefix_prompt",
    "build_short_summary_prompt",
    "branch_instructions",
    "build_branch_prompt",
    "merge_split_turn",
    "finalize_summary",
    "finalize_branch_summary",
]

#
SUMMARIZATION_SYSTEM_PROMPT = (
    "You condense conversations so that work can be handed over. You will be given the transcript "
    "of a conversation between a user and an AI coding assistant. Write a structured summary in "
    "exactly the format you are asked for.\n\n"
    "Do not carry on the conversation, do not answer any question that appears in it, and write "
    "nothing except the summary."
)

# the checkpoint format (headings exact), first compaction of a session.
SUMMARY_PROMPT = """The transcript above is a conversation to condense. Turn it into a structured checkpoint; a different model will rely on this checkpoint alone to carry on the work.

Follow this format exactly:

## Goal
[The outcome the user wants; list several if the session covered more than one task]

## Constraints & Preferences
- [Requirements, constraints and preferences the user stated]
- [Write "(none)" if there were none]

## Progress
### Done
- [x] [Finished tasks and changes]

### In Progress
- [ ] [Work that is under way]

### Blocked
- [Whatever stops progress, if anything]

## Key Decisions
- **[Decision]**: [Short reason]

## Next Steps
1. [What should happen next, in order]

## Critical Context
- [Facts, data, examples or references needed to continue]
- [Write "(none)" if there are none]

Keep every section short. Keep file paths, function names and error messages exactly as written."""

# later compactions fold new messages into the previous summary.
UPDATE_SUMMARY_PROMPT = """The transcript above holds only NEW messages. Merge them into the earlier summary given in the <previous-summary> block and return the updated summary.

Rules:
- KEEP every piece of information from the earlier summary
- ADD the new progress, decisions and context
- MOVE items from "In Progress" to "Done" once they are finished
- REWRITE "Next Steps" to fit what has now been done
- KEEP file paths, function names and error messages exactly as written
- Remove something only when it is clearly no longer relevant

Follow this format exactly:

## Goal
[Keep the earlier goals; add new ones if the task grew]

## Constraints & Preferences
- [Keep the earlier ones; add any new ones]

## Progress
### Done
- [x] [Everything done before AND everything finished since]

### In Progress
- [ ] [Current work, brought up to date]

### Blocked
- [Current blockers; drop those that were resolved]

## Key Decisions
- **[Decision]**: [Short reason] (keep all earlier decisions, add new ones)

## Next Steps
1. [Updated to the current state]

## Critical Context
- [Keep what still matters; add new facts if needed]

Keep every section short. Keep file paths, function names and error messages exactly as written."""

# the first part of a turn that was too large to keep.
TURN_PREFIX_PROMPT = """The transcript above is only the FIRST PART of a single turn that was too large to keep. The REST of that turn is kept word for word right after this summary.

Summarize this first part so the kept rest makes sense on its own:

## Original Request
[What the user asked for in this turn]

## Early Progress
- [Work done and decisions taken in this first part]

## Context for Suffix
- [What a reader needs to know to follow the kept rest]

Be brief; include only what the kept rest depends on."""

# branch summaries (no Critical Context section).
BRANCH_SUMMARY_PROMPT = """Write a structured summary of this conversation branch, to be read when the user comes back to it later.

Follow this format exactly:

## Goal
[What the user was trying to achieve on this branch]

## Constraints & Preferences
- [Requirements, constraints and preferences that came up]
- [Write "(none)" if there were none]

## Progress
### Done
- [x] [Finished tasks and changes]

### In Progress
- [ ] [Work that was started but not finished]

### Blocked
- [Whatever stopped progress, if anything]

## Key Decisions
- **[Decision]**: [Short reason]

## Next Steps
1. [What should happen next to continue this work]

Keep every section short. Keep file paths, function names and error messages exactly as written."""

# Q-8 [PI]: two lines, then a blank line before the summary text.
BRANCH_SUMMARY_PREAMBLE = (
    "The user went down a different conversation branch and then came back to this point.\n"
    "Here is a summary of that detour:\n\n"
)

# Q-9 [OMP]: the one-paragraph description shown in UIs (S-17, opt-in per D-1).
SHORT_SUMMARY_PROMPT = """Describe what was accomplished, the way a pull-request description would, for the work shown above and in the <previous-summary> block.

- Two or three sentences at most, in the first person ("I added ...", "I fixed ...")
- Describe the changes themselves, not how they were made
- Do not mention tests, builds or other checks
- Do not repeat the user's request
- Never ask a question"""

NO_PRIOR_HISTORY = "No prior history."  # S-9
SPLIT_TURN_SEPARATOR = "\n\n---\n\n**Turn Context (split turn):**\n\n"  # S-9
NO_BRANCH_CONTENT = "No content to summarize"  # B-10
NO_SUMMARY_GENERATED = "No summary generated"  # B-14
ADDITIONAL_FOCUS = "Additional focus: "  # S-2, B-11

SUMMARY_HEADINGS = (
    "## Goal",
    "## Constraints & Preferences",
    "## Progress",
    "### Done",
    "### In Progress",
    "### Blocked",
    "## Key Decisions",
    "## Next Steps",
    "## Critical Context",
)
TURN_PREFIX_HEADINGS = ("## Original Request", "## Early Progress", "## Context for Suffix")
BRANCH_SUMMARY_HEADINGS = SUMMARY_HEADINGS[:-1]

WRAPPER_TAGS = ("conversation", "previous-summary", "additional-context")
# `escape_wrapped` (see the module docstring) lives with the serializer, which is compiled: a dry
# run calls it once per part of the history, tens of thousands of times on a long path.


def wrap_conversation(conversation_text: str) -> str:
    """`<conversation>\\n…\\n</conversation>\\n\\n` (S-4, B-12, S-9)."""
    return f"<conversation>\n{escape_wrapped(conversation_text)}\n</conversation>\n\n"


def with_custom_focus(base_prompt: str, custom_instructions: str | None) -> str:
    """S-2: append `\\n\\nAdditional focus: <instructions>` when instructions are non-empty."""
    if custom_instructions:
        return f"{base_prompt}\n\n{ADDITIONAL_FOCUS}{custom_instructions}"
    return base_prompt


def history_base_prompt(previous_summary: str | None) -> str:
    """S-1: the update prompt when there is a previous summary, else the initial prompt."""
    return UPDATE_SUMMARY_PROMPT if previous_summary else SUMMARY_PROMPT


def build_history_prompt(
    conversation_text: str,
    *,
    previous_summary: str | None = None,
    custom_instructions: str | None = None,
    additional_context: Iterable[str] | None = None,
    base_prompt: str | None = None,
) -> str:
    """S-1..S-4: the single user message of a history-summary request.

    `base_prompt` replaces the initial/update prompt (the oh-my-pi `session.compacting` hook);
    `additional_context` lines become the `<additional-context>` bullet block.
    """
    base = with_custom_focus(base_prompt if base_prompt is not None else history_base_prompt(previous_summary),
                             custom_instructions)
    text = wrap_conversation(conversation_text)
    if previous_summary:
        text += f"<previous-summary>\n{escape_wrapped(previous_summary)}\n</previous-summary>\n\n"
    lines = list(additional_context or [])
    if lines:
        bullets = "\n".join(f"- {escape_wrapped(line)}" for line in lines)
        text += f"<additional-context>\n{bullets}\n</additional-context>\n\n"
    return text + base


def build_turn_prefix_prompt(conversation_text: str) -> str:
    """S-9: no previous summary, no custom instructions, no additional context."""
    return wrap_conversation(conversation_text) + TURN_PREFIX_PROMPT


def build_short_summary_prompt(
    recent_text: str, merged_summary: str, additional_context: Iterable[str] | None = None
) -> str:
    """S-17 [OMP]: `<conversation>` = the kept (recent) messages, `<previous-summary>` = the merged
    summary before file tags, optional additional context, then the short-summary prompt."""
    return build_history_prompt(recent_text, previous_summary=merged_summary,
                                additional_context=additional_context, base_prompt=SHORT_SUMMARY_PROMPT)


def branch_instructions(custom_instructions: str | None, replace_instructions: bool = False) -> str:
    """B-11: custom instructions replace the default prompt (replace mode) or add a focus line."""
    if replace_instructions and custom_instructions:
        return custom_instructions
    return with_custom_focus(BRANCH_SUMMARY_PROMPT, custom_instructions)


def build_branch_prompt(
    conversation_text: str, custom_instructions: str | None = None, replace_instructions: bool = False
) -> str:
    """B-12."""
    return wrap_conversation(conversation_text) + branch_instructions(custom_instructions, replace_instructions)


def merge_split_turn(history_summary: str | None, turn_prefix_summary: str) -> str:
    """S-9: history (or `No prior history.` when nothing preceded the split turn) + separator +
    turn-prefix summary."""
    history = history_summary if history_summary is not None else NO_PRIOR_HISTORY
    return f"{history}{SPLIT_TURN_SEPARATOR}{turn_prefix_summary}"


def finalize_summary(summary: str, read_files: list[str], modified_files: list[str]) -> str:
    """S-12: the summary followed by the file tags (O-4)."""
    return summary + format_file_operations(read_files, modified_files)


def finalize_branch_summary(response_text: str, read_files: list[str], modified_files: list[str]) -> str:
    """B-14: preamble + model text + file tags."""
    summary = BRANCH_SUMMARY_PREAMBLE + response_text + format_file_operations(read_files, modified_files)
    return summary or NO_SUMMARY_GENERATED
