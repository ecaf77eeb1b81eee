"""Params of every daemon method, validated with pydantic (camelCase on the wire).

Unknown fields are ignored (clients may be newer than us; LSP adds `workDoneToken` etc.), types are
strict (no "5" for 5, no "yes" for true). Results are plain dicts whose shapes are shared with the
CLI's `--json` output (session/views.py, compaction/reports.py); protocol.md documents all of them.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, TypeVar

import pydantic
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, PrivateAttr
from pydantic.alias_generators import to_camel

from compactd.session.model import AppendableMessage, UserContentBlock

from .errors import invalid_params

HOOK_NAMES = ("beforeCompact", "compacting", "beforeTree")
DEFAULT_HOOK_TIMEOUT_MS = 5000

NonEmpty = Annotated[str, Field(min_length=1)]


def _no_nul(value: str) -> str:
    # The OS refuses such paths; refuse them here, with the field's name, before they reach a Path.
    if "\x00" in value:
        raise ValueError("must not contain a NUL character")
    return value


PathText = Annotated[str, Field(min_length=1), AfterValidator(_no_nul)]
ProgressToken = int | str


class Params(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=False, extra="ignore", strict=True)
    _raw: dict[str, Any] = PrivateAttr(default_factory=dict)

    def raw(self) -> dict[str, Any]:
        """The params exactly as received (appended entries are stored verbatim)."""
        return self._raw


# --- lifecycle ---------------------------------------------------------------------------------


class InitOptions(Params):
    """`initializationOptions` (and the payload of workspace/didChangeConfiguration)."""

    settings: dict[str, Any] = Field(default_factory=dict)  # merged over Pi's settings files
    summarizer: dict[str, Any] | None = None  # summarizer section, e.g. {backend: "openai", ...}
    hooks: list[Literal["beforeCompact", "compacting", "beforeTree"]] = Field(default_factory=list)
    hook_timeout_ms: int = Field(default=DEFAULT_HOOK_TIMEOUT_MS, ge=0)


# --- sessions ----------------------------------------------------------------------------------


class OpenParams(Params):
    path: PathText
    cwd: PathText | None = None  # cwd recorded in the header if the file does not exist yet
    # The agent model's context window for automatic compaction and tokenStats (else looked up by name).
    context_window: int | None = Field(default=None, ge=1)


class CreateParams(Params):
    cwd: PathText
    path: PathText | None = None
    in_memory: bool = False
    context_window: int | None = Field(default=None, ge=1)


class ListParams(Params):
    pass


class ListFilesParams(Params):
    cwd: PathText | None = None
    dir: PathText | None = None  # a folder to list instead of Pi's default one for cwd


class SessionParams(Params):
    session_id: NonEmpty


class LeafParams(SessionParams):
    # Omitted: the session's leaf. null: before the first entry (empty context).
    leaf_id: str | None = None

    @property
    def leaf_given(self) -> bool:
        return "leaf_id" in self.model_fields_set


class ContextParams(LeafParams):
    include_messages: bool = False


class FieldsError(ValueError):
    """Fields that are each valid but not together: one `(field, message)` per field to name
    (`invalid_params` reports them like per-field errors)."""

    def __init__(self, problems: list[tuple[str, str]]) -> None:
        super().__init__("; ".join(f"{name}: {message}" for name, message in problems))
        self.problems = problems


class TreeParams(SessionParams):
    # With `limit`: pages of the panel's lists instead of every node (protocol.md, session/tree).
    limit: int | None = Field(default=None, ge=1, le=10000)
    branch: NonEmpty | None = None
    after: NonEmpty | None = None
    before: NonEmpty | None = None
    # Without `limit`: the nodes streamed as `$/progress` chunks under this token (tree_stream.py).
    partial_result_token: ProgressToken | None = None

    @pydantic.model_validator(mode="after")
    def _one_cursor(self) -> "TreeParams":
        problems: list[tuple[str, str]] = []
        if self.after is not None and self.before is not None:
            problems.append(("before", "not allowed together with after (give at most one cursor)"))
        if self.limit is None:
            given = [name for name in ("branch", "after", "before") if name in self.model_fields_set]
            if given:
                problems.append(("limit", f"required with {', '.join(given)}"))
        if problems:
            raise FieldsError(problems)
        return self


class EntryParams(SessionParams):
    entry_id: NonEmpty


class TokenStatsParams(LeafParams):
    pass


class PrepareParams(LeafParams):
    keep_recent_tokens: int | None = Field(default=None, ge=0)
    reserve_tokens: int | None = Field(default=None, ge=0)
    custom_instructions: str | None = None
    # False: conversationText and turnPrefixText are null (a client that does not show them
    # saves serializing and sending the history, megabytes on a long path).
    include_text: bool = True


class CompactParams(SessionParams):
    custom_instructions: str | None = None
    work_done_token: ProgressToken | None = None


class NavigateParams(SessionParams):
    target_id: NonEmpty
    summarize: bool = False
    custom_instructions: str | None = None
    replace_instructions: bool = False
    label: str | None = None
    work_done_token: ProgressToken | None = None


class PruneParams(SessionParams):
    dry_run: bool = False


class LabelParams(SessionParams):
    target_id: NonEmpty
    label: str | None = None  # empty or null clears


class ForkParams(SessionParams):
    leaf_id: NonEmpty | None = None  # default: the session's leaf
    path: PathText | None = None
    in_memory: bool | None = None


class ReportOverflowParams(SessionParams):
    error_message: str | None = None
    work_done_token: ProgressToken | None = None


# --- session/append entries --------------------------------------------------------------------


class _EntryIn(Params):
    pass


class MessageIn(_EntryIn):
    type: Literal["message"]
    message: AppendableMessage  # F-13, same rules as session.model.validate_appendable_message


class ThinkingLevelIn(_EntryIn):
    type: Literal["thinking_level_change"]
    thinking_level: NonEmpty


class ModelChangeIn(_EntryIn):
    type: Literal["model_change"]
    provider: NonEmpty
    model_id: NonEmpty


class CustomIn(_EntryIn):
    type: Literal["custom"]
    custom_type: NonEmpty
    data: Any = None


class CustomMessageIn(_EntryIn):
    type: Literal["custom_message"]
    custom_type: NonEmpty
    content: str | list[UserContentBlock]
    display: bool = True
    details: Any = None


class LabelIn(_EntryIn):
    type: Literal["label"]
    target_id: NonEmpty
    label: str | None = None


class SessionInfoIn(_EntryIn):
    type: Literal["session_info"]
    name: str


AppendEntry = Annotated[
    MessageIn | ThinkingLevelIn | ModelChangeIn | CustomIn | CustomMessageIn | LabelIn | SessionInfoIn,
    Field(discriminator="type"),
]
APPENDABLE_TYPES = ("message", "thinking_level_change", "model_change", "custom", "custom_message", "label",
                    "session_info")


class AppendParams(SessionParams):
    entries: list[AppendEntry]


# --- parsing -----------------------------------------------------------------------------------

P = TypeVar("P", bound=BaseModel)


def parse(model: type[P], raw: Any) -> P:
    """Validate raw params; failures become InvalidParams naming the field."""
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise invalid_params(f"params: expected an object, got {type(raw).__name__}")
    try:
        params = model.model_validate(raw)
    except pydantic.ValidationError as exc:
        raise invalid_params(exc) from None
    if isinstance(params, Params):
        params._raw = raw
    return params
