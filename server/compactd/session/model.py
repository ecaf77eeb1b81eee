"""Typed description of Pi session files (spec §2).

The store keeps entries as plain dicts (exactly the JSON objects of the file) so that
unknown fields and unknown entry types survive a load/save round trip untouched and
large files load fast. These pydantic models describe and validate the same objects at
the boundaries: entries a client asks us to append, RPC payloads, and tests that check
real files conform. Every model allows extra fields for forward compatibility.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from .lines import CURRENT_SESSION_VERSION, drop_none, encode_line  # noqa: F401  (re-exported)

# Entry types whose shape we know (spec §2.3); anything else is preserved as-is.
KNOWN_ENTRY_TYPES = frozenset(
    {
        "message",
        "thinking_level_change",
        "model_change",
        "compaction",
        "branch_summary",
        "custom",
        "custom_message",
        "label",
        "session_info",
        "context_edit",
        "usage",
    }
)

# Roles a `message` entry may carry (F-13); summaries only exist as projections.
APPENDABLE_ROLES = frozenset({"user", "assistant", "toolResult", "bashExecution", "custom", "developer"})


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True)


# --- content blocks ---------------------------------------------------------------------------


class TextContent(_Open):
    type: Literal["text"]
    text: str


class ImageContent(_Open):
    type: Literal["image"]
    data: str
    mimeType: str


class ThinkingContent(_Open):
    type: Literal["thinking"]
    thinking: str


class ToolCall(_Open):
    type: Literal["toolCall"]
    id: str
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)


UserContentBlock = Annotated[Union[TextContent, ImageContent], Field(discriminator="type")]
AssistantContentBlock = Annotated[
    Union[TextContent, ThinkingContent, ToolCall], Field(discriminator="type")
]


# --- usage (F-12) -----------------------------------------------------------------------------


class Cost(_Open):
    input: float = 0
    output: float = 0
    cacheRead: float = 0
    cacheWrite: float = 0
    total: float = 0


class Usage(_Open):
    input: int = 0
    output: int = 0
    cacheRead: int = 0
    cacheWrite: int = 0
    totalTokens: int = 0
    cost: Cost = Field(default_factory=Cost)


# --- messages (§2.4) --------------------------------------------------------------------------


class UserMessage(_Open):
    role: Literal["user"]
    content: str | list[UserContentBlock] | None = None
    timestamp: int | float | None = None


class AssistantMessage(_Open):
    role: Literal["assistant"]
    content: list[AssistantContentBlock] | None = None
    api: str | None = None
    provider: str | None = None
    model: str | None = None
    usage: Usage | None = None
    stopReason: Literal["stop", "length", "toolUse", "error", "aborted"] | None = None
    errorMessage: str | None = None
    timestamp: int | float | None = None


class ToolResultMessage(_Open):
    role: Literal["toolResult"]
    toolCallId: str
    toolName: str
    content: list[UserContentBlock] | None = None
    details: Any = None
    isError: bool = False
    timestamp: int | float | None = None
    prunedAt: int | None = None


class BashExecutionMessage(_Open):
    role: Literal["bashExecution"]
    command: str
    output: str = ""
    exitCode: int | None = None
    cancelled: bool = False
    truncated: bool = False
    fullOutputPath: str | None = None
    excludeFromContext: bool | None = None
    timestamp: int | float | None = None


class CustomMessage(_Open):
    role: Literal["custom"]
    customType: str
    content: str | list[UserContentBlock] | None = None
    display: bool = True
    details: Any = None
    timestamp: int | float | None = None


class DeveloperMessage(_Open):
    role: Literal["developer"]
    content: str | None = None
    timestamp: int | float | None = None


class SystemMessage(_Open):
    """Pi 1.6 prompt and tool-loadout state (Q16-2); also a compaction's checkpoint (Q16-13)."""

    role: Literal["system"]
    content: str | list[UserContentBlock] | None = None
    sections: dict[str, str | None] | None = None
    toolsAdded: list[dict[str, Any]] | None = None
    toolsRemoved: list[dict[str, Any]] | None = None
    timestamp: int | float | None = None


class BranchSummaryMessage(_Open):
    role: Literal["branchSummary"]
    summary: str
    fromId: str
    timestamp: int | float | None = None


class CompactionSummaryMessage(_Open):
    role: Literal["compactionSummary"]
    summary: str
    tokensBefore: int
    timestamp: int | float | None = None


AgentMessage = Annotated[
    Union[
        UserMessage,
        AssistantMessage,
        ToolResultMessage,
        BashExecutionMessage,
        CustomMessage,
        DeveloperMessage,
        SystemMessage,
        BranchSummaryMessage,
        CompactionSummaryMessage,
    ],
    Field(discriminator="role"),
]
AppendableMessage = Annotated[
    Union[
        UserMessage,
        AssistantMessage,
        ToolResultMessage,
        BashExecutionMessage,
        CustomMessage,
        DeveloperMessage,
    ],
    Field(discriminator="role"),
]


# --- header and entries (§2.1–2.3) ------------------------------------------------------------


class SessionHeader(_Open):
    type: Literal["session"]
    version: int | None = None  # absent means version 1 (F-2)
    id: str
    timestamp: str | None = None
    cwd: str | None = None
    parentSession: str | None = None


class _EntryBase(_Open):
    id: str
    parentId: str | None = None
    timestamp: str


class MessageEntry(_EntryBase):
    type: Literal["message"]
    message: AgentMessage


class ThinkingLevelChangeEntry(_EntryBase):
    type: Literal["thinking_level_change"]
    thinkingLevel: str


class ModelChangeEntry(_EntryBase):
    type: Literal["model_change"]
    provider: str | None = None
    modelId: str | None = None


class CompactionEntry(_EntryBase):
    type: Literal["compaction"]
    summary: str
    firstKeptEntryId: str | None = None
    tokensBefore: int
    details: Any = None
    fromHook: bool | None = None
    usage: Usage | None = None
    systemMessage: SystemMessage | None = None  # Q16-13


class BranchSummaryEntry(_EntryBase):
    type: Literal["branch_summary"]
    fromId: str
    summary: str
    details: Any = None
    fromHook: bool | None = None
    usage: Usage | None = None


class CustomEntry(_EntryBase):
    type: Literal["custom"]
    customType: str
    data: Any = None


class CustomMessageEntry(_EntryBase):
    type: Literal["custom_message"]
    customType: str
    content: str | list[UserContentBlock] | None = None
    display: bool = True
    details: Any = None


class LabelEntry(_EntryBase):
    type: Literal["label"]
    targetId: str
    label: str | None = None


class SessionInfoEntry(_EntryBase):
    type: Literal["session_info"]
    name: str | None = None


class ContextEditReplacement(_Open):
    content: str | list[dict[str, Any]]


class ContextEditEntry(_EntryBase):
    """Q16-21: hides (`replacement: null`) or replaces the model content of one earlier entry."""

    type: Literal["context_edit"]
    targetId: str
    replacement: ContextEditReplacement | None


class UsageEntry(_EntryBase):
    """Q16-33: usage outside the conversation (e.g. cache warming); never in context."""

    type: Literal["usage"]
    kind: str
    provider: str | None = None
    model: str | None = None
    usage: Usage | None = None
    note: str | None = None


class UnknownEntry(_EntryBase):
    """An entry type we do not model (e.g. oh-my-pi's `ttsr_injection`); kept verbatim."""

    type: str


KnownEntry = Annotated[
    Union[
        MessageEntry,
        ThinkingLevelChangeEntry,
        ModelChangeEntry,
        CompactionEntry,
        BranchSummaryEntry,
        CustomEntry,
        CustomMessageEntry,
        LabelEntry,
        SessionInfoEntry,
        ContextEditEntry,
        UsageEntry,
    ],
    Field(discriminator="type"),
]

_known_entry_adapter: TypeAdapter[Any] = TypeAdapter(KnownEntry)
_message_adapter: TypeAdapter[Any] = TypeAdapter(AgentMessage)
_appendable_message_adapter: TypeAdapter[Any] = TypeAdapter(AppendableMessage)


def parse_entry(obj: dict[str, Any]) -> BaseModel:
    """Validate one stored entry dict and return its typed model."""
    if obj.get("type") in KNOWN_ENTRY_TYPES:
        return _known_entry_adapter.validate_python(obj)
    return UnknownEntry.model_validate(obj)


def parse_message(obj: dict[str, Any]) -> BaseModel:
    return _message_adapter.validate_python(obj)


def validate_appendable_message(obj: dict[str, Any]) -> None:
    """Raise pydantic.ValidationError unless `obj` may be stored as a `message` entry (F-13)."""
    _appendable_message_adapter.validate_python(obj)
