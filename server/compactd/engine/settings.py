"""compactd settings: Pi's settings files + our own keys, validated (spec §16, D-13, D-19).

Sources, lowest to highest precedence:
1. built-in defaults (the table in spec §16.1, pruning per D-19, `summarizer` below);
2. the global file `<agentDir>/settings.json`, agentDir = `$PI_CODING_AGENT_DIR` (`~` expanded) or
   `~/.pi/agent`;
3. the project file `<cwd>/.pi/settings.json`, merged over the global one with Pi's rule G-3
   (top-level key by key; two objects are merged one level deep, anything else replaces);
4. the environment: `COMPACTD_MODEL` sets `summarizer.model` and `COMPACTD_SUMMARIZER` sets
   `summarizer.backend`; `OPENAI_BASE_URL` only fills `summarizer.baseUrl` when no file sets it
   (it is shared with other tools, so an explicit compactd setting wins);
5. client overrides (CLI / RPC), merged with the same G-3 rule.
A file that is not valid JSON (or not an object) counts as empty and its error is recorded in
`Settings.errors` (G-4). Invalid values raise `SettingsError` naming the key.

Summarizer selection (`summarizer.backend`, default "auto"):
- "auto": a remote endpoint (`compaction.remoteEndpoint`, with `remoteEnabled` not false) serves
  history summaries, everything else goes to the local choice below (turn prefixes are never sent
  remote, S-16). Local choice: `summarizer.candidates` when given (tried in order); else the
  OpenAI-compatible backend when a base URL is configured or the API-key variable
  (`summarizer.apiKeyEnv`, default OPENAI_API_KEY) is set; else the extractive summarizer.
- "openai" / "remote" / "extractive" force a backend ("remote" still summarizes turn prefixes and
  branches locally).
The model defaults to DEFAULT_MODEL. Context window: `summarizer.contextWindow`, else the built-in
table by model-name prefix, else 128000; the engine checks every summarization prompt against it
and summarizes a history that does not fit in chunks. `summarizer.maxConcurrency` (default 2)
bounds the model calls of one compaction in flight at once (1 = the split-turn calls run one after
the other, for single-slot servers). `summarizer.strictHeadings` (default false): a model reply
still missing required headings after the reminder fails the compaction instead of being replaced
by the embedded summarizer's summary. `compat` (default "auto", D-29): whose semantics compaction
and branch summaries follow — oh-my-pi 18's on a file that starts with oh-my-pi's title slot line,
Pi's on every other; "pi" or "omp" forces one. Reasoning: `summarizer.reasoning`, else guessed from the
model name (o1/o3/o4/gpt-5 families). API keys are never stored here: only variable names are.
"""

from __future__ import annotations

import json
import math
import os
import re
import time
from pathlib import Path
from typing import Any, Literal
from collections.abc import Mapping

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from ..compaction.settings import CompactionSettings as CoreCompactionSettings
from ..compaction.settings import COMPAT_CHOICES, applied_compat
from ..summarize.base import Summarizer
from ..summarize.candidates import CandidateSummarizer
from ..summarize.extractive import ExtractiveSummarizer
from ..summarize.openai_chat import PI_THINKING_LEVELS, OpenAIChatConfig, OpenAIChatSummarizer
from ..summarize.remote import RemoteHistorySummarizer, RemoteSummarizer
from ..summarize.retry import RetryPolicy

__all__ = [
    "DEFAULT_CONTEXT_WINDOW",
    "DEFAULT_MODEL",
    "SettingsError",
    "CompactionSection",
    "BranchSummarySection",
    "RetrySection",
    "PruningSection",
    "CandidateSection",
    "SummarizerSection",
    "Settings",
    "agent_dir",
    "merge_settings",
    "load_settings",
    "SettingsCache",
    "build_summarizer",
    "context_window_for_model",
    "max_output_tokens_for_model",
    "is_reasoning_model",
]

DEFAULT_CONTEXT_WINDOW = 128000
DEFAULT_MODEL = "gpt-4.1-mini"
BACKENDS = ("auto", "openai", "remote", "extractive")

# Longest matching prefix wins (lower-cased model id, provider prefix like "openai/" stripped).
_CONTEXT_WINDOWS: tuple[tuple[str, int], ...] = (
    ("gpt-5", 400000),
    ("gpt-4.1", 1047576),
    ("gpt-4o", 128000),
    ("gpt-4-turbo", 128000),
    ("gpt-4", 8192),
    ("gpt-3.5-turbo", 16385),
    ("o1-mini", 128000),
    ("o1", 200000),
    ("o3", 200000),
    ("o4", 200000),
    ("claude", 200000),
    ("gemini", 1048576),
    ("llama", 128000),
    ("qwen", 32768),
    ("mistral", 32768),
    ("mixtral", 32768),
    ("deepseek", 65536),
)
_MAX_OUTPUT: tuple[tuple[str, int], ...] = (
    ("gpt-5", 128000),
    ("gpt-4.1", 32768),
    ("gpt-4o", 16384),
    ("gpt-4-turbo", 4096),
    ("gpt-3.5-turbo", 4096),
    ("o1-mini", 65536),
    ("o1", 100000),
    ("o3", 100000),
    ("o4", 100000),
)
_REASONING_PREFIXES = ("o1", "o3", "o4", "gpt-5")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class SettingsError(ValueError):
    """An invalid setting. `key` is the dotted key (e.g. "compaction.reserveTokens")."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(message)
        self.key = key


# -- models ------------------------------------------------------------------------------------
class _Section(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, frozen=True)


class CompactionSection(_Section):
    enabled: bool = True
    reserve_tokens: int = 16384
    keep_recent_tokens: int = 20000
    auto_continue: bool = True
    remote_endpoint: str | None = None
    remote_enabled: bool = True


class BranchSummarySection(_Section):
    reserve_tokens: int = 16384
    skip_prompt: bool = False


class RetrySection(_Section):
    enabled: bool = True
    max_retries: int = 3
    base_delay_ms: int = 2000
    max_delay_ms: int = 60000  # also read from retry.provider.maxRetryDelayMs


class PruningSection(_Section):
    enabled: bool = True
    protect_tokens: int = 40000
    minimum_savings: int = 20000
    protected_tools: tuple[str, ...] = ("skill", "read")


class CandidateSection(_Section):
    base_url: str | None = None
    model: str | None = None
    api_key_env: str | None = None
    context_window: int | None = None
    max_output_tokens: int | None = None
    reasoning: bool | None = None
    timeout_seconds: float | None = None


class SummarizerSection(_Section):
    backend: Literal["auto", "openai", "remote", "extractive"] = "auto"
    base_url: str | None = None
    model: str | None = None
    api_key_env: str = "OPENAI_API_KEY"
    context_window: int | None = None
    max_output_tokens: int | None = None
    reasoning: bool | None = None
    reasoning_efforts: tuple[str, ...] | None = None
    timeout_seconds: float = 120.0
    isolation_fields: bool = True
    candidates: tuple[CandidateSection, ...] = ()
    max_concurrency: int = 2
    strict_headings: bool = False


class Settings(_Section):
    compaction: CompactionSection = Field(default_factory=CompactionSection)
    branch_summary: BranchSummarySection = Field(default_factory=BranchSummarySection)
    retry: RetrySection = Field(default_factory=RetrySection)
    pruning: PruningSection = Field(default_factory=PruningSection)
    summarizer: SummarizerSection = Field(default_factory=SummarizerSection)
    # D-29: "auto" (oh-my-pi's semantics on oh-my-pi's files, Pi's elsewhere) | "pi" | "omp".
    compat: Literal["auto", "pi", "omp"] = "auto"
    # Files that were read, and parse errors recorded instead of raised (G-4).
    sources: tuple[str, ...] = ()
    errors: tuple[str, ...] = ()

    @property
    def model(self) -> str:
        return self.summarizer.model or DEFAULT_MODEL

    @property
    def context_window(self) -> int:
        """The summarizer model's window; also the default when a session's model is unknown."""
        return self.summarizer.context_window or context_window_for_model(self.summarizer.model)

    def compaction_settings(self) -> CoreCompactionSettings:
        c = self.compaction
        return CoreCompactionSettings(
            enabled=c.enabled, reserve_tokens=c.reserve_tokens, keep_recent_tokens=c.keep_recent_tokens
        )

    def compat_for(self, session: Any) -> str:
        """"pi" or "omp": the semantics that apply to `session` (D-29); oh-my-pi's files are
        recognized by the title slot line before their header."""
        file = getattr(session, "file", None)
        return applied_compat(self.compat, bool(getattr(file, "prelude", b"")))

    def retry_policy(self) -> RetryPolicy:
        r = self.retry
        return RetryPolicy(
            enabled=r.enabled,
            max_retries=r.max_retries,
            base_delay_ms=r.base_delay_ms,
            max_delay_ms=r.max_delay_ms,
        )

    def check_context_window(self, context_window: int) -> None:
        """D-13 for compaction against a session model's window."""
        self.check_reserve("compaction", context_window)

    def check_reserve(self, section: Literal["compaction", "branchSummary"], context_window: int | None = None) -> None:
        """D-13: a reserve that leaves no room is an error, never an unlimited budget. Checked
        where the reserve is used (compaction, a branch summary), against the summarizer's window
        unless another is given: checked on load, a branch-summary reserve refused every
        compaction on a small server (README's small-server recipe, issue 26 §11)."""
        window = self.context_window if context_window is None else context_window
        value = self.compaction.reserve_tokens if section == "compaction" else self.branch_summary.reserve_tokens
        if value >= window:
            key = f"{section}.reserveTokens"
            raise SettingsError(key, f"{key} ({value}) must be smaller than the context window ({window})")

    def to_dict(self) -> dict[str, Any]:
        """camelCase, JSON-ready; holds environment variable names only, never key values."""
        return self.model_dump(mode="json", by_alias=True)


# -- helpers -----------------------------------------------------------------------------------
def _model_key(model: str | None) -> str:
    m = (model or "").lower()
    return m.rsplit("/", 1)[-1]


def _lookup(table: tuple[tuple[str, int], ...], model: str | None) -> int | None:
    key = _model_key(model)
    best: tuple[int, int] | None = None
    for prefix, value in table:
        if key.startswith(prefix) and (best is None or len(prefix) > best[0]):
            best = (len(prefix), value)
    return best[1] if best else None


def context_window_for_model(model: str | None) -> int:
    return _lookup(_CONTEXT_WINDOWS, model) or DEFAULT_CONTEXT_WINDOW


def max_output_tokens_for_model(model: str | None) -> int:
    """Known output caps (model.maxTokens, S-6); 0 = unknown, no cap."""
    return _lookup(_MAX_OUTPUT, model) or 0


def is_reasoning_model(model: str | None) -> bool:
    return _model_key(model).startswith(_REASONING_PREFIXES)


def agent_dir(env: Mapping[str, str] | None = None, home: Path | str | None = None) -> Path:
    env = os.environ if env is None else env
    home_path = Path(home) if home is not None else Path.home()
    raw = env.get("PI_CODING_AGENT_DIR")
    if not raw:
        return home_path / ".pi" / "agent"
    if raw == "~":
        return home_path
    if raw.startswith("~/") or raw.startswith("~\\"):
        return home_path / raw[2:]
    return Path(raw)


def merge_settings(base: Mapping[str, Any], override: Mapping[str, Any] | None) -> dict[str, Any]:
    """Pi's G-3 merge: per top-level key, objects merge one level deep, other values replace."""
    out = dict(base)
    for key, value in (override or {}).items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = {**out[key], **value}
        else:
            out[key] = value
    return out


def _read_file(path: Path, errors: list[str], sources: list[str]) -> dict[str, Any]:
    if not path.is_file():
        return {}
    sources.append(str(path))
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        errors.append(f"Failed to parse {path}: {exc}")
        return {}
    if not isinstance(data, dict):
        errors.append(f"Failed to parse {path}: expected a JSON object, got {type(data).__name__}")
        return {}
    return data


# -- validation --------------------------------------------------------------------------------
def _section(raw: Mapping[str, Any], key: str) -> dict[str, Any]:
    value = raw.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise SettingsError(key, f"{key} must be an object")
    return value


def _int(sec: Mapping[str, Any], path: str, name: str, default: int | None, minimum: int = 0) -> int | None:
    value = sec.get(name)
    if value is None:
        return default
    if isinstance(value, float) and value.is_integer() and math.isfinite(value):
        value = int(value)
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise SettingsError(f"{path}.{name}", f"{path}.{name} must be an integer >= {minimum}")
    return value


def _bool(sec: Mapping[str, Any], path: str, name: str, default: bool | None) -> bool | None:
    value = sec.get(name)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise SettingsError(f"{path}.{name}", f"{path}.{name} must be true or false")
    return value


def _str(sec: Mapping[str, Any], path: str, name: str, default: str | None = None) -> str | None:
    value = sec.get(name)
    if value is None:
        return default
    if not isinstance(value, str) or not value.strip():
        raise SettingsError(f"{path}.{name}", f"{path}.{name} must be a non-empty string")
    return value.strip()


def _url(sec: Mapping[str, Any], path: str, name: str) -> str | None:
    value = _str(sec, path, name)
    if value is not None and not re.match(r"^https?://[^\s/]+", value):
        raise SettingsError(f"{path}.{name}", f"{path}.{name} must be an http:// or https:// URL")
    return value


def _seconds(sec: Mapping[str, Any], path: str, name: str, default: float | None) -> float | None:
    value = sec.get(name)
    if value is None:
        return default
    if (
        not isinstance(value, (int, float))
        or isinstance(value, bool)
        or not math.isfinite(value)
        or value <= 0
    ):
        raise SettingsError(f"{path}.{name}", f"{path}.{name} must be a number > 0")
    return float(value)


def _env_name(sec: Mapping[str, Any], path: str, default: str | None) -> str | None:
    if "apiKey" in sec or "api_key" in sec:
        raise SettingsError(
            f"{path}.apiKey",
            f"{path}.apiKey is not supported: put the key in an environment variable "
            f"and name it in {path}.apiKeyEnv",
        )
    value = sec.get("apiKeyEnv")
    if value is None:
        return default
    # The value is never echoed: a key pasted here by mistake must not end up in logs.
    if not isinstance(value, str) or not _ENV_NAME.match(value):
        raise SettingsError(
            f"{path}.apiKeyEnv",
            f"{path}.apiKeyEnv must be the NAME of an environment variable (e.g. OPENAI_API_KEY), "
            "not the key itself",
        )
    return value


def _candidate(raw: Any, path: str) -> CandidateSection:
    if not isinstance(raw, dict):
        raise SettingsError(path, f"{path} must be an object")
    model = _str(raw, path, "model")
    if model is None:
        raise SettingsError(f"{path}.model", f"{path}.model is required")
    return CandidateSection(
        base_url=_url(raw, path, "baseUrl"),
        model=model,
        api_key_env=_env_name(raw, path, None),
        context_window=_int(raw, path, "contextWindow", None, minimum=1),
        max_output_tokens=_int(raw, path, "maxOutputTokens", None),
        reasoning=_bool(raw, path, "reasoning", None),
        timeout_seconds=_seconds(raw, path, "timeoutSeconds", None),
    )


def _validate(raw: Mapping[str, Any], sources: list[str], errors: list[str]) -> Settings:
    c = _section(raw, "compaction")
    compaction = CompactionSection(
        enabled=_bool(c, "compaction", "enabled", True),
        reserve_tokens=_int(c, "compaction", "reserveTokens", 16384),
        keep_recent_tokens=_int(c, "compaction", "keepRecentTokens", 20000),
        auto_continue=_bool(c, "compaction", "autoContinue", True),
        remote_endpoint=_url(c, "compaction", "remoteEndpoint"),
        remote_enabled=_bool(c, "compaction", "remoteEnabled", True),
    )
    b = _section(raw, "branchSummary")
    branch = BranchSummarySection(
        reserve_tokens=_int(b, "branchSummary", "reserveTokens", 16384),
        skip_prompt=_bool(b, "branchSummary", "skipPrompt", False),
    )
    r = _section(raw, "retry")
    provider = r.get("provider") if isinstance(r.get("provider"), dict) else {}
    max_delay = _int(r, "retry", "maxDelayMs", None)
    if max_delay is None:
        max_delay = _int(provider, "retry.provider", "maxRetryDelayMs", 60000)
    retry = RetrySection(
        enabled=_bool(r, "retry", "enabled", True),
        max_retries=_int(r, "retry", "maxRetries", 3),
        base_delay_ms=_int(r, "retry", "baseDelayMs", 2000),
        max_delay_ms=max_delay,
    )
    p = _section(raw, "pruning")
    tools = p.get("protectedTools", ["skill", "read"])
    if not isinstance(tools, list) or not all(isinstance(t, str) for t in tools):
        raise SettingsError("pruning.protectedTools", "pruning.protectedTools must be a list of tool names")
    pruning = PruningSection(
        enabled=_bool(p, "pruning", "enabled", True),
        protect_tokens=_int(p, "pruning", "protectTokens", 40000),
        minimum_savings=_int(p, "pruning", "minimumSavings", 20000),
        protected_tools=tuple(tools),
    )
    s = _section(raw, "summarizer")
    backend = s.get("backend", "auto")
    if backend not in BACKENDS:
        raise SettingsError("summarizer.backend", "summarizer.backend must be one of: " + ", ".join(BACKENDS))
    efforts = s.get("reasoningEfforts")
    if efforts is not None and (
        not isinstance(efforts, list) or not all(isinstance(e, str) for e in efforts)
    ):
        raise SettingsError(
            "summarizer.reasoningEfforts", "summarizer.reasoningEfforts must be a list of strings"
        )
    cands = s.get("candidates") or []
    if not isinstance(cands, list):
        raise SettingsError("summarizer.candidates", "summarizer.candidates must be a list of objects")
    summarizer = SummarizerSection(
        backend=backend,
        base_url=_url(s, "summarizer", "baseUrl"),
        model=_str(s, "summarizer", "model"),
        api_key_env=_env_name(s, "summarizer", "OPENAI_API_KEY"),
        context_window=_int(s, "summarizer", "contextWindow", None, minimum=1),
        max_output_tokens=_int(s, "summarizer", "maxOutputTokens", None),
        reasoning=_bool(s, "summarizer", "reasoning", None),
        reasoning_efforts=tuple(efforts) if efforts is not None else None,
        timeout_seconds=_seconds(s, "summarizer", "timeoutSeconds", 120.0),
        isolation_fields=_bool(s, "summarizer", "isolationFields", True),
        max_concurrency=_int(s, "summarizer", "maxConcurrency", 2, minimum=1),
        strict_headings=_bool(s, "summarizer", "strictHeadings", False),
        candidates=tuple(_candidate(x, f"summarizer.candidates[{i}]") for i, x in enumerate(cands)),
    )
    if backend == "remote" and not compaction.remote_endpoint:
        raise SettingsError(
            "summarizer.backend", "summarizer.backend is 'remote' but compaction.remoteEndpoint is not set"
        )
    compat = raw.get("compat", "auto")
    if compat not in COMPAT_CHOICES:
        raise SettingsError("compat", "compat must be one of: " + ", ".join(COMPAT_CHOICES))
    settings = Settings(
        compaction=compaction,
        branch_summary=branch,
        retry=retry,
        pruning=pruning,
        summarizer=summarizer,
        compat=compat,
        sources=tuple(sources),
        errors=tuple(errors),
    )
    return settings  # (the reserves are checked where they are used: `check_reserve`)


# -- entry points ------------------------------------------------------------------------------
def load_settings(
    cwd: str | Path,
    overrides: Mapping[str, Any] | None = None,
    env: Mapping[str, str] | None = None,
    home: str | Path | None = None,
) -> Settings:
    env = os.environ if env is None else env
    errors: list[str] = []
    sources: list[str] = []
    global_raw = _read_file(agent_dir(env, home) / "settings.json", errors, sources)
    project_raw = _read_file(Path(cwd) / ".pi" / "settings.json", errors, sources)
    raw = merge_settings(global_raw, project_raw)

    env_summarizer: dict[str, Any] = {}
    if env.get("COMPACTD_MODEL"):
        env_summarizer["model"] = env["COMPACTD_MODEL"]
    if env.get("COMPACTD_SUMMARIZER"):
        env_summarizer["backend"] = env["COMPACTD_SUMMARIZER"]
    current = raw.get("summarizer") if isinstance(raw.get("summarizer"), dict) else {}
    if env.get("OPENAI_BASE_URL") and not current.get("baseUrl"):
        env_summarizer["baseUrl"] = env["OPENAI_BASE_URL"]
    if env_summarizer:
        raw = merge_settings(raw, {"summarizer": env_summarizer})
    if overrides:
        if not isinstance(overrides, Mapping):
            raise SettingsError("overrides", "settings overrides must be an object")
        raw = merge_settings(raw, dict(overrides))
    return _validate(raw, sources, errors)


# The environment variables `load_settings` reads, besides the files.
_ENV_KEYS = ("PI_CODING_AGENT_DIR", "HOME", "COMPACTD_MODEL", "COMPACTD_SUMMARIZER", "OPENAI_BASE_URL")


def _file_signature(path: Path) -> tuple[int, int, int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino)


class SettingsCache:
    """`load_settings` for a long-running process, answering from memory while nothing it reads
    has changed: both files (checked by `stat` on every call, so an edit applies at once), the
    environment variables above and the overrides. Reading and validating again on every request
    cost the daemon about 1 ms per request, more than a whole context answer. Invalid settings and
    files modified within the last second are never kept (see `_RACY_NS`). The settings are frozen
    models, safe to share."""

    def __init__(self, env: Mapping[str, str] | None = None, home: str | Path | None = None) -> None:
        self._env = env
        self._home = home
        self._agent_dir: tuple[tuple[str | None, ...], Path] | None = None
        self._entries: dict[tuple[Any, ...], Settings] = {}
        # Per request, only what may have changed is looked at again: the files' paths per cwd
        # and the key of the latest overrides object are kept (a daemon passes the same one).
        self._project_files: dict[str, Path] = {}
        self._overrides_key: tuple[Mapping[str, Any] | None, str | None] = (None, None)

    def load(self, cwd: str | Path, overrides: Mapping[str, Any] | None = None) -> Settings:
        """Callers that pass the same `overrides` object again must not have changed it."""
        env = os.environ if self._env is None else self._env
        env_values = tuple(env.get(name) for name in _ENV_KEYS)
        if self._agent_dir is None or self._agent_dir[0] != env_values:
            self._agent_dir = (env_values, agent_dir(env, self._home) / "settings.json")
        global_file = self._agent_dir[1]
        cwd_text = str(cwd)
        project_file = self._project_files.get(cwd_text)
        if project_file is None:
            if len(self._project_files) >= 64:
                self._project_files.clear()
            project_file = self._project_files[cwd_text] = Path(cwd) / ".pi" / "settings.json"
        if overrides is not self._overrides_key[0]:
            self._overrides_key = (overrides, json.dumps(overrides, sort_keys=True, default=repr) if overrides else None)
        key = (
            cwd_text,
            env_values,
            _file_signature(global_file),
            _file_signature(project_file),
            self._overrides_key[1],
        )
        settings = self._entries.get(key)
        if settings is None:
            settings = load_settings(cwd, overrides, env, self._home)
            if not _recently_modified(key[2], key[3]):
                if len(self._entries) >= 64:  # old signatures of edited files: keep the newest ones
                    self._entries.pop(next(iter(self._entries)))
                self._entries[key] = settings
        return settings


# File times tick with the kernel's coarse clock (milliseconds): a second edit of the same size
# within one tick would keep the signature. Files modified this recently are read every time.
_RACY_NS = 1_000_000_000


def _recently_modified(*signatures: tuple[int, int, int, int] | None) -> bool:
    now = time.time_ns()
    return any(sig is not None and now - max(sig[0], sig[1]) < _RACY_NS for sig in signatures)


def _openai(
    settings: Settings, env: Mapping[str, str], cand: CandidateSection | None = None
) -> OpenAIChatSummarizer:
    s = settings.summarizer
    # A candidate inherits connection settings (base URL, key variable, timeout) from `summarizer`;
    # model-specific values (output cap, reasoning) come from the candidate or its model name.
    model = (cand.model if cand else None) or s.model or DEFAULT_MODEL
    own = cand if cand is not None else s
    max_out = own.max_output_tokens
    if max_out is None:
        max_out = max_output_tokens_for_model(model)
    reasoning = own.reasoning
    if reasoning is None:
        reasoning = is_reasoning_model(model)
    window = own.context_window or context_window_for_model(model)
    config = OpenAIChatConfig(
        model=model,
        base_url=(cand.base_url if cand else None) or s.base_url,
        api_key_env=(cand.api_key_env if cand else None) or s.api_key_env,
        max_output_tokens=max_out,
        reasoning=reasoning,
        reasoning_efforts=s.reasoning_efforts or PI_THINKING_LEVELS,
        timeout_seconds=(cand.timeout_seconds if cand else None) or s.timeout_seconds,
        isolation_fields=s.isolation_fields,
        retry=settings.retry_policy(),
        context_window=window,
    )
    return OpenAIChatSummarizer(config, env)


def _local(settings: Settings, env: Mapping[str, str], force_openai: bool = False) -> Summarizer:
    s = settings.summarizer
    if s.candidates:
        return CandidateSummarizer([_openai(settings, env, c) for c in s.candidates])
    if force_openai or s.base_url or env.get(s.api_key_env):
        return _openai(settings, env)
    return ExtractiveSummarizer()


def build_summarizer(settings: Settings, env: Mapping[str, str] | None = None) -> Summarizer:
    """The summarizer the settings ask for (see the module docstring for the selection rules)."""
    env = os.environ if env is None else env
    s = settings.summarizer
    c = settings.compaction
    if s.backend == "extractive":
        return ExtractiveSummarizer()
    if s.backend == "openai":
        return _local(settings, env, force_openai=True)
    remote_on = bool(c.remote_endpoint) and (c.remote_enabled or s.backend == "remote")
    local = _local(settings, env)
    if remote_on and c.remote_endpoint:
        remote = RemoteSummarizer(
            c.remote_endpoint, timeout_seconds=s.timeout_seconds, retry=settings.retry_policy()
        )
        return RemoteHistorySummarizer(remote, local)
    return local
