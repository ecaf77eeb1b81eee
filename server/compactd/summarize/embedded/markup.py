"""What a coding-agent harness adds to the conversation around the user's own words, read as what it
is: reminders the harness injects (never the user's words), slash commands, the user's own shell
commands, interruption markers, and a tool call the user declined at the permission prompt.

These are the published conventions of the agents whose sessions compactd reads (Claude Code writes
`<system-reminder>`, `<command-name>`, `<bash-input>` and "[Request interrupted by user]"; Codex
writes `<environment_context>`, and heads a command's output with "Key: value" lines up to "Output:");
none is taken from a particular session.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# Text the harness injects for the model: reminders, environment descriptions. Never the user's words.
_INJECTED = re.compile(r"<(system-reminder|environment_context|user-prompt-submit-hook)>.*?</\1>\s*", re.DOTALL)
# Output of the harness's own local commands (/cost, /model ...): neither request nor result of the work.
_LOCAL_OUTPUT = re.compile(r"<(local-command-stdout|local-command-stderr)>.*?</\1>\s*", re.DOTALL)
_COMMAND_NAME = re.compile(r"<command-name>\s*(.*?)\s*</command-name>", re.DOTALL)
_COMMAND_ARGS = re.compile(r"<command-args>\s*(.*?)\s*</command-args>", re.DOTALL)
_COMMAND_TAGS = re.compile(r"<(command-name|command-message|command-args|command-contents)>.*?</\1>\s*", re.DOTALL)
_BASH_INPUT = re.compile(r"<bash-input>\s*(.*?)\s*</bash-input>", re.DOTALL)
_BASH_OUTPUT = re.compile(r"<(bash-stdout|bash-stderr)>(.*?)</\1>", re.DOTALL)
# "[Request interrupted by user]", "[Request interrupted by user for tool use]", Pi's "Request was aborted."
_INTERRUPTED = re.compile(r"^\s*\[?(?:request (?:was )?interrupted by (?:the )?user[^\]\n]*|request was aborted\.?)\]?\s*$",
                          re.IGNORECASE | re.MULTILINE)
# A tool result saying the user declined the call at the permission prompt, and what they said instead.
_DECLINED = re.compile(r"\b(?:the user (?:doesn'?t|does not|didn'?t|did not) want to (?:proceed|take this action|run)"
                       r"|tool use was rejected|rejected by the user|user (?:denied|declined) (?:this|the) (?:tool|request|action))",
                       re.IGNORECASE)
# The envelope some harnesses put around a command's output: a few short lines opened by a "Key: value"
# one (an id, the wall time, the exit code), then "Output:" on a line of its own.
_ENVELOPE = re.compile(r"\A[ \t]*[A-Z][\w ]{0,30}:[^\n]*\n(?:[^\n]{0,80}\n){0,7}?[ \t]*Output:[ \t]*\n")
_USER_SAID = re.compile(r"\bthe user said:\s*(.+)\Z", re.IGNORECASE | re.DOTALL)


@dataclass
class UserTurn:
    text: str  # the user's own words, harness markup removed
    interrupted: bool = False  # the message (also) says the user stopped the agent
    command: str = ""  # a slash command the user ran ("/review"), its arguments are in `text`
    shell: tuple[str, str] | None = None  # the user's own shell command and its output
    skill: str = ""  # the message is a skill's instructions the harness loaded (the skill's folder)


def strip_injected(text: str) -> str:
    """Text without what the harness injected for the model."""
    return _INJECTED.sub("", text) if "<" in text else text


# Claude Code loads a skill's instructions as a message of their own, headed by the skill's folder.
_SKILL = re.compile(r"\ABase directory for this skill:\s*(\S+)\s*")


def read_user(text: str) -> UserTurn:
    """A user message as the user meant it."""
    text = strip_injected(text)
    skill = _SKILL.match(text)
    if skill:
        return UserTurn(text[skill.end():].strip(), skill=skill.group(1).rstrip("/").rsplit("/", 1)[-1])
    if "<" in text:
        text = _LOCAL_OUTPUT.sub("", text)
        bash = _BASH_INPUT.search(text)
        if bash:
            output = "\n".join(m.group(2).strip() for m in _BASH_OUTPUT.finditer(text) if m.group(2).strip())
            return UserTurn("", shell=(bash.group(1), output))
        name = _COMMAND_NAME.search(text)
        if name:
            args = _COMMAND_ARGS.search(text)
            rest = _COMMAND_TAGS.sub("", text).strip()
            words = "\n".join(x for x in ((args.group(1) if args else ""), rest) if x)
            return UserTurn(words.strip(), command=name.group(1).strip())
    interrupted = bool(_INTERRUPTED.search(text))
    if interrupted:
        text = _INTERRUPTED.sub("", text)
    return UserTurn(text.strip(), interrupted=interrupted)


def declined(result_text: str) -> str | None:
    """When a tool result says the user declined the call: what the user said instead ('' when
    nothing); None when the call was not declined."""
    head = result_text[:600]
    if not _DECLINED.search(head):
        return None
    said = _USER_SAID.search(result_text)
    return strip_injected(said.group(1)).strip() if said else ""


_ENVELOPE_EXIT = re.compile(r"^[ \t]*(?:Process |Command )?exit(?:ed with)?(?: code)?:?[ \t]+(?:code[ \t]+)?(-?\d+)[ \t]*$",
                            re.IGNORECASE | re.MULTILINE)


def envelope_failed(output: str) -> bool:
    """Whether the harness's envelope around a command's output gives a non-zero exit code."""
    m = _ENVELOPE.match(output)
    code = _ENVELOPE_EXIT.search(m.group(0)) if m else None
    return bool(code) and code.group(1) != "0"


def without_envelope(output: str) -> str:
    """A command's output without the harness's envelope before it (unchanged when there is none)."""
    return _ENVELOPE.sub("", output, count=1)
