"""OpenAI-compatible summarizer: streaming Chat Completions through the openai SDK.

What one request carries (S-5, S-6, S-7, S-8 / D-9):
- `messages`: one system message (the summarization system prompt) and exactly one user message
  with the full prompt text, both as plain strings (the most widely accepted form). No tools.
- `stream: true` with `stream_options.include_usage` so the last chunk reports usage.
- Output cap: `min(request.max_tokens, max_output_tokens)` when the cap is > 0, else the request's
  value. Non-reasoning models get `max_tokens`; reasoning models get `max_completion_tokens`
  (OpenAI's reasoning models reject `max_tokens`, and the newer name counts hidden reasoning).
- Reasoning: `reasoning_effort` only when the model is configured as a reasoning model and the
  request has a thinking level other than "off". Pi levels map onto the API's effort names
  one-to-one (minimal, low, medium, high, xhigh); a level the configured model does not list in
  `reasoning_efforts` is clamped to the nearest listed one (e.g. xhigh -> high on servers that only
  know low/medium/high).
- Isolation: a fresh random UUID per request (never the agent's session id), sent as the headers
  `x-compactd-request-id` and `x-compactd-request-kind` (history / turn_prefix / branch), and, when
  `isolation_fields` is on (default), as `user` and `prompt_cache_key` = "compactd-<uuid>" so the
  provider routes every summarization to a cache bucket of its own: no prompt-cache reuse across
  requests. Turn it off for strict servers that reject unknown fields.

The SDK's own retries are disabled; `retry.run_with_retries` retries timeouts, connection errors,
429, 408/5xx and streams that end before a finish_reason (StreamCutOffError) — except for a request
marked `parallel`, whose cut-off is raised at once so the engine can retry the calls one at a time.
Overflow errors (M-22) are never retried; the window the server names in its error, if any, is
kept on the ContextOverflowError.

In-band errors (HTTP 200, then an error inside the stream) are read in every shape real servers
send: `data: {"error": {...}}` (OpenAI, vLLM, llama.cpp today), vLLM's older unwrapped
`data: {"object": "error", "message": ...}`, and llama.cpp's older non-standard SSE field
`error: {...}`, which the SDK's decoder would drop (the stream would look cut off and be retried);
a small decoder subclass turns that line into the standard form. The server's own message is
what the user sees.

Usage: when the server sends no usage chunk (llama-cpp-python and others ignore
`stream_options.include_usage`), the result carries an estimate — tiktoken counts of the prompt
(system + user message) and of the reply text — marked `"estimated": true`.
The API key is read from the environment variable named in the config at call time and never
appears in reprs or error texts. What the server sends back may hold it (an error page quoting the
request, a proxy echoing the Authorization header into the completion): the key and every piece
of it of 8 characters or more are masked in error texts (before they are shortened), in the
streamed text and in the summary (`masking.py`). A redirect to another origin is never followed:
the conversation would go to a server nobody configured.
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
import uuid
from dataclasses import dataclass, field
from typing import Any
from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import openai
else:

    class _LazyOpenAI:
        """The openai SDK costs seconds to import; load it on first use so the daemon and the
        CLI start fast when the embedded summarizer serves."""

        def __getattr__(self, name: str) -> Any:
            import openai as sdk

            return getattr(sdk, name)

    openai = _LazyOpenAI()

from ..compaction.overflow import context_window_from_error_text, is_overflow_error_text
from .base import (
    ContextOverflowError,
    OnText,
    RejectedResponseError,
    StreamCutOffError,
    SummarizationError,
    SummaryRequest,
    SummaryResult,
    TransientError,
    empty_text_message,
    kind_label,
    retry_notice,
    token_cap_message,
    tool_call_message,
)
from .masking import KeyMask
from .retry import (
    TRANSIENT_TEXT,
    RetryPolicy,
    retry_after_ms_from_headers,
    retry_after_ms_from_text,
    run_with_retries,
)

__all__ = [
    "OpenAIChatConfig",
    "OpenAIChatSummarizer",
    "PI_THINKING_LEVELS",
    "DEFAULT_BASE_URL",
    "map_reasoning_effort",
    "usage_from_openai",
    "estimate_usage",
]

DEFAULT_BASE_URL = "https://api.openai.com/v1"
PI_THINKING_LEVELS: tuple[str, ...] = ("minimal", "low", "medium", "high", "xhigh")
# Sent as the bearer token when a non-OpenAI server is used without a key (local servers).
_PLACEHOLDER_KEY = "compactd-no-key"
_QUOTA_TEXT = ("insufficient_quota", "quota", "billing")


@dataclass(frozen=True)
class OpenAIChatConfig:
    model: str
    base_url: str | None = None  # None -> OpenAI's public endpoint
    api_key_env: str = "OPENAI_API_KEY"  # the variable's NAME; the value is read at call time
    max_output_tokens: int = 0  # model.maxTokens; 0 = no cap
    reasoning: bool = False  # the model accepts reasoning_effort
    reasoning_efforts: tuple[str, ...] = PI_THINKING_LEVELS
    timeout_seconds: float = 120.0  # per connect / read (idle between chunks)
    isolation_fields: bool = True
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    # USD per million tokens, Pi's model.cost shape: {input, output, cacheRead, cacheWrite}.
    cost_per_million: Mapping[str, float] | None = None
    name: str | None = None
    # The model's context window (summarizer.contextWindow or the known-model table); the engine
    # checks prompts against it before sending. None = unknown, no check.
    context_window: int | None = None

    @property
    def endpoint(self) -> str:
        return (self.base_url or DEFAULT_BASE_URL).rstrip("/")


def map_reasoning_effort(level: str | None, supported: tuple[str, ...] = PI_THINKING_LEVELS) -> str | None:
    """Pi thinking level -> reasoning_effort value; None/"off" -> no option at all."""
    if not level or level == "off" or not supported:
        return None
    if level in supported:
        return level
    order = list(PI_THINKING_LEVELS)
    if level not in order:
        return None
    want = order.index(level)
    ranked = sorted(
        (s for s in supported if s in order), key=lambda s: (abs(order.index(s) - want), -order.index(s))
    )
    return ranked[0] if ranked else None


def estimate_usage(
    prompt_text: str, completion_text: str, model: str | None, cost_per_million: Mapping[str, float] | None = None
) -> dict[str, Any]:
    """Pi usage from tiktoken counts, for servers that report none; marked `estimated`."""
    from ..compaction.exact_tokens import MESSAGE_OVERHEAD_TOKENS, get_counter

    counter = get_counter(model)
    prompt = counter.count_text(prompt_text) + 2 * MESSAGE_OVERHEAD_TOKENS  # system + user framing
    completion = counter.count_text(completion_text)
    usage = usage_from_openai({"prompt_tokens": prompt, "completion_tokens": completion}, cost_per_million)
    assert usage is not None
    usage["estimated"] = True
    return usage


def usage_from_openai(
    raw: Mapping[str, Any] | None, cost_per_million: Mapping[str, float] | None = None
) -> dict[str, Any] | None:
    """OpenAI usage -> Pi usage (F-12). Cached prompt tokens are cacheRead, the rest input;
    completion_tokens already include reasoning tokens, so they are not added again."""
    if not raw:
        return None

    def num(v: Any) -> int:
        return int(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else 0

    prompt = num(raw.get("prompt_tokens"))
    details = raw.get("prompt_tokens_details") or {}
    cached = num(details.get("cached_tokens")) if isinstance(details, Mapping) else 0
    cache_write = num(details.get("cache_write_tokens")) if isinstance(details, Mapping) else 0
    output = num(raw.get("completion_tokens"))
    input_tokens = max(0, prompt - cached - cache_write)
    rates = cost_per_million or {}
    cost = {
        "input": rates.get("input", 0) * input_tokens / 1e6,
        "output": rates.get("output", 0) * output / 1e6,
        "cacheRead": rates.get("cacheRead", 0) * cached / 1e6,
        "cacheWrite": rates.get("cacheWrite", 0) * cache_write / 1e6,
    }
    cost["total"] = sum(cost.values())
    return {
        "input": input_tokens,
        "output": output,
        "cacheRead": cached,
        "cacheWrite": cache_write,
        "totalTokens": input_tokens + output + cached + cache_write,
        "cost": cost,
    }


class OpenAIChatSummarizer:
    """Summarizer backed by any OpenAI-compatible `/chat/completions` endpoint."""

    def __init__(self, config: OpenAIChatConfig, env: Mapping[str, str] | None = None) -> None:
        self.config = config
        self._env = env if env is not None else os.environ
        self.name = config.name or f"openai:{config.model}"

    def __repr__(self) -> str:
        cfg = self.config
        return (
            f"OpenAIChatSummarizer(model={cfg.model!r}, base_url={cfg.endpoint!r}, "
            f"api_key_env={cfg.api_key_env!r})"
        )

    # -- public ---------------------------------------------------------------------------------
    @property
    def context_window(self) -> int | None:
        return self.config.context_window

    async def summarize(self, request: SummaryRequest, on_text: OnText | None = None) -> SummaryResult:
        key = self._api_key()
        notice = retry_notice.get()

        def on_retry(attempt: int, delay_ms: float, err: TransientError) -> None:
            if notice is not None:
                notice(f"{err.message}; retrying in {delay_ms / 1000:g}s (attempt {attempt + 1})")

        return await run_with_retries(
            lambda: self._attempt(request, on_text, key),
            self.config.retry,
            on_retry=on_retry,
            # A parallel call cut off by the server is the engine's to retry, one call at a time.
            retry_if=lambda err: not (request.parallel and isinstance(err, StreamCutOffError)),
        )

    def build_body(self, request: SummaryRequest, request_id: str) -> dict[str, Any]:
        """The keyword arguments for `chat.completions.create` (also used by tests and dry runs)."""
        cfg = self.config
        max_tokens = request.max_tokens
        if cfg.max_output_tokens > 0:
            max_tokens = min(max_tokens, cfg.max_output_tokens)
        body: dict[str, Any] = {
            "model": cfg.model,
            "messages": [
                {"role": "system", "content": request.system_prompt},
                {"role": "user", "content": request.prompt},
            ],
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if cfg.reasoning:
            body["max_completion_tokens"] = max_tokens
            effort = map_reasoning_effort(request.reasoning, cfg.reasoning_efforts)
            if effort is not None:
                body["reasoning_effort"] = effort
        else:
            body["max_tokens"] = max_tokens
        if cfg.isolation_fields:
            # extra_body: works with every SDK version, whether or not it knows the field names.
            body["extra_body"] = {
                "user": f"compactd-{request_id}",
                "prompt_cache_key": f"compactd-{request_id}",
            }
        body["extra_headers"] = {
            "x-compactd-request-id": request_id,
            "x-compactd-request-kind": request.kind.value,
        }
        return body

    # -- internals ------------------------------------------------------------------------------
    def _api_key(self) -> str | None:
        key = self._env.get(self.config.api_key_env) or None
        if key is None and self.config.base_url is None:
            raise SummarizationError(
                f"no API key for {DEFAULT_BASE_URL}: set the environment variable {self.config.api_key_env}"
            )
        return key

    def _client(self, key: str | None) -> openai.AsyncOpenAI:
        timeout = openai.Timeout(self.config.timeout_seconds)
        return _client_class()(
            api_key=key or _PLACEHOLDER_KEY,
            base_url=self.config.endpoint,
            max_retries=0,  # we retry ourselves (policy from settings, Retry-After cap)
            timeout=timeout,
            http_client=openai.DefaultAsyncHttpxClient(timeout=timeout,
                                                       event_hooks={"response": [_refuse_cross_origin]}),
        )

    async def _attempt(
        self, request: SummaryRequest, on_text: OnText | None, key: str | None
    ) -> SummaryResult:
        label = kind_label(request.kind)
        mask = KeyMask(key)
        shown = mask.stream()
        body = self.build_body(request, str(uuid.uuid4()))
        parts: list[str] = []
        usage_raw: dict[str, Any] | None = None
        finish: str | None = None
        saw_tool_call = False
        chunks = 0
        content_type = ""
        async with self._client(key) as client:
            try:
                stream = await client.chat.completions.create(**body)
            except openai.APIError as exc:
                raise self._classify(exc, label, key) from None
            except _redirect_refused() as exc:
                raise SummarizationError(f"{label} failed: {exc}") from None
            content_type = _content_type(stream)
            try:
                async for chunk in stream:
                    chunks += 1
                    if getattr(chunk, "object", None) == "error":  # vLLM's older unwrapped in-band error
                        raise self._in_stream_error(chunk, label, key)
                    if chunk.usage is not None:
                        usage_raw = chunk.usage.model_dump()
                    for choice in chunk.choices:
                        delta = choice.delta
                        if delta is not None:
                            if delta.tool_calls or getattr(delta, "function_call", None):
                                saw_tool_call = True
                            if delta.content:
                                parts.append(delta.content)
                                if on_text is not None and (visible := shown.feed(delta.content)):
                                    on_text(visible)
                        if choice.finish_reason:
                            finish = choice.finish_reason
            except openai.APIError as exc:
                # A transport failure after the answer was complete only loses the usage chunk.
                if not (finish is not None and isinstance(exc, openai.APIConnectionError)):
                    raise self._classify(exc, label, key) from None
            except (json.JSONDecodeError, ValueError) as exc:
                raise SummarizationError(
                    f"{label} failed: malformed streaming data from {self.config.endpoint} "
                    f"({type(exc).__name__})"
                ) from None
            finally:
                # Closing the response tells the server we are gone (also on cancellation).
                await stream.close()

        if on_text is not None and (visible := shown.flush()):
            on_text(visible)
        text = mask.text("".join(parts))
        if finish is None and chunks == 0 and not content_type.startswith("text/event-stream"):
            # Not a dropped stream: the server answered with something else (a plain JSON body, an
            # HTML page), which asking again will not change.
            raise SummarizationError(
                f"{label} failed: {self.config.endpoint} did not answer with an event stream "
                f"(content-type {content_type or 'missing'}); is it an OpenAI-compatible "
                "/chat/completions endpoint?"
            )
        if finish is None and chunks == 0 and not request.parallel:
            # Not one event: llama.cpp's answer to a prompt over its window when it sends no error
            # field. Asking again would get the same (a parallel call may instead have been
            # pushed out by its sibling on a one-slot server: the engine runs it again alone).
            raise ContextOverflowError(await self._empty_stream_message(request, label))
        if finish is None:
            raise StreamCutOffError(
                f"{label} failed: the response stream from {self.config.endpoint} ended before the answer "
                "was complete (the server stopped it or the connection dropped)"
            )
        if finish == "length":
            raise RejectedResponseError(token_cap_message(request.kind))
        if saw_tool_call or finish in ("tool_calls", "function_call"):
            raise RejectedResponseError(tool_call_message(request.kind))
        if finish == "content_filter":
            raise SummarizationError(f"{label} failed: the provider's content filter stopped the response")
        if not text.strip():
            raise RejectedResponseError(empty_text_message(request.kind))
        usage = usage_from_openai(usage_raw, self.config.cost_per_million)
        if usage is None:
            usage = await asyncio.to_thread(
                estimate_usage,
                request.system_prompt + "\n" + request.prompt,
                text,
                self.config.model,
                self.config.cost_per_million,
            )
        return SummaryResult(text=text, usage=usage, model_called=True)

    async def _empty_stream_message(self, request: SummaryRequest, label: str) -> str:
        from ..compaction.exact_tokens import get_counter

        counter = get_counter(self.config.model)
        tokens = await asyncio.to_thread(counter.count_text, request.system_prompt + "\n" + request.prompt)
        window = self.config.context_window
        assumed = f"; the window assumed now is {window} tokens" if window is not None else ""
        hint = (f"set summarizer.contextWindow to the server's context size (llama.cpp: --ctx-size{assumed}) "
                "and compactd will summarize the history in chunks that fit")
        return (f"{label} failed: {self.config.endpoint} closed the response stream without sending "
                f"anything, as servers do for a prompt larger than their context window; this prompt "
                f"is about {tokens} tokens (estimated); not retried; {hint}")

    def _in_stream_error(self, chunk: Any, label: str, key: str | None) -> SummarizationError:
        extra = chunk.model_extra or {}
        message = extra.get("message") if isinstance(extra.get("message"), str) else "unknown error"
        # Classified from the message alone: building an `openai.APIError` needs a request object, and
        # openai 3.60 dereferences it (request=None raised AttributeError inside the error path).
        return self._classify_message(message, extra, label, key)

    def _scrub(self, text: str, key: str | None) -> str:
        return KeyMask(key).text(text)

    def _classify(self, exc: openai.APIError, label: str, key: str | None) -> SummarizationError:
        cfg = self.config
        where = cfg.endpoint
        if isinstance(exc, openai.APITimeoutError):
            return TransientError(
                f"{label} failed: request to {where} timed out after {cfg.timeout_seconds:g}s"
            )
        if isinstance(exc, openai.APIConnectionError):
            cause = exc.__cause__
            detail = f": {type(cause).__name__}" if cause is not None else ""
            return TransientError(f"{label} failed: connection error talking to {where}{detail}")
        if isinstance(exc, openai.APIStatusError):
            status = exc.status_code
            text = _status_text(exc, KeyMask(key))
            if _is_overflow(text, exc.body):
                return ContextOverflowError(f"{label} failed: {text}", _window_in(text, exc.body))
            if status == 401:
                return SummarizationError(
                    f"{label} failed: authentication failed at {where} "
                    f"(check the API key environment variable {cfg.api_key_env})"
                )
            if status == 403:
                return SummarizationError(
                    f"{label} failed: access denied at {where} for model '{cfg.model}' "
                    f"(check the API key environment variable {cfg.api_key_env})"
                )
            if status == 404:
                return SummarizationError(f"{label} failed: model '{cfg.model}' not found at {where}")
            if status == 429 and any(q in text.lower() for q in _QUOTA_TEXT):
                return SummarizationError(f"{label} failed: {text} (quota exhausted; not retried)")
            if status in (408, 409, 425, 429) or status >= 500:
                headers = dict(exc.response.headers)
                hint = retry_after_ms_from_headers(headers)
                if hint is None:
                    hint = retry_after_ms_from_text(text)
                return TransientError(f"{label} failed: {text}", retry_after_ms=hint)
            return SummarizationError(f"{label} failed: {text}")
        return self._classify_message(exc.message, exc.body, label, key)

    def _classify_message(self, message: str | None, body: Any, label: str, key: str | None) -> SummarizationError:
        """An error with no status (an `error` event inside the stream): only a message and a body."""
        text = self._scrub(message or "unknown error", key)
        if _is_overflow(text, body):
            return ContextOverflowError(f"{label} failed: {text}", _window_in(text, body))
        if TRANSIENT_TEXT.search(text):
            return TransientError(f"{label} failed: {text}", retry_after_ms=retry_after_ms_from_text(text))
        return SummarizationError(f"{label} failed: {text}")


_OVERFLOW_CODES = ("context_length_exceeded", "exceed_context_size_error")


def _is_overflow(text: str, body: Any) -> bool:
    """M-22's text test, plus the error codes servers attach to an overflow."""
    if is_overflow_error_text(text):
        return True
    inner = body.get("error", body) if isinstance(body, Mapping) else None
    return isinstance(inner, Mapping) and (inner.get("code") in _OVERFLOW_CODES or inner.get("type") in _OVERFLOW_CODES)


def _window_in(text: str, body: Any) -> int | None:
    inner = body.get("error", body) if isinstance(body, Mapping) else None
    n_ctx = inner.get("n_ctx") if isinstance(inner, Mapping) else None
    if isinstance(n_ctx, int) and not isinstance(n_ctx, bool) and n_ctx > 0:
        return n_ctx
    return context_window_from_error_text(text)


@functools.lru_cache(maxsize=1)
def _client_class() -> type:
    """AsyncOpenAI whose SSE decoder also reads llama.cpp's older `error: {...}` field as an
    in-band error. Falls back to the plain client when the SDK's decoder hooks are missing."""
    try:
        from openai._streaming import SSEDecoder
    except ImportError:  # pragma: no cover - SDK layout changed
        return openai.AsyncOpenAI
    base = openai.AsyncOpenAI
    if not hasattr(base, "_make_sse_decoder"):  # pragma: no cover
        return base

    class _Decoder(SSEDecoder):  # type: ignore[misc]
        def decode(self, line: str) -> Any:
            if line.startswith("error:"):
                raw = line[len("error:"):].strip()
                try:
                    error: Any = json.loads(raw)
                except ValueError:
                    error = {"message": raw}
                if not isinstance(error, dict):
                    error = {"message": str(error)}
                line = "data: " + json.dumps({"error": error})
            return super().decode(line)

    class _Client(base):  # type: ignore[misc, valid-type]
        def _make_sse_decoder(self) -> Any:
            return _Decoder()

    return _Client


def _content_type(stream: Any) -> str:
    response = getattr(stream, "response", None)
    headers = getattr(response, "headers", None)
    value = headers.get("content-type", "") if headers is not None else ""
    return str(value).lower()


def _status_text(exc: openai.APIStatusError, mask: KeyMask) -> str:
    """`<status> <message>` like the JS SDK Pi uses, so M-22 patterns (e.g. Cerebras'
    `400 status code (no body)`) match the same texts. The key is masked before a long body is
    shortened (cut first, a key across the cut kept its first part)."""
    body = exc.body
    message: str | None = None
    if isinstance(body, Mapping):
        inner = body.get("error", body)
        if isinstance(inner, Mapping):
            m = inner.get("message")
            message = m if isinstance(m, str) and m else None
        elif isinstance(inner, str) and inner:
            message = inner
        if message is None and isinstance(body.get("message"), str):
            message = body["message"]
    elif isinstance(body, str) and body.strip():
        message = mask.text(body.strip())[:500]
    if message is None:
        return f"{exc.status_code} status code (no body)"
    return f"{exc.status_code} {mask.text(message)}"


async def _refuse_cross_origin(response: Any) -> None:
    """httpx response hook: a redirect to another scheme, host or port is refused before it is
    followed (the SDK follows redirects; the request body would be sent there)."""
    if not response.has_redirect_location:
        return
    source = response.request.url
    target = source.join(response.headers["location"])
    if (target.scheme, target.host, target.port) != (source.scheme, source.host, source.port):
        where = f"{target.scheme}://{target.host}" + (f":{target.port}" if target.port else "")
        raise _redirect_refused()(
            f"{source.scheme}://{source.host}{f':{source.port}' if source.port else ''} answered "
            f"{response.status_code} redirecting to another origin ({where}); not followed, nothing "
            "was sent there (set summarizer.baseUrl to the server that answers)")


@functools.lru_cache(maxsize=1)
def _redirect_refused() -> type[Exception]:
    """The error `_refuse_cross_origin` raises: an OpenAIError, which the SDK passes on as it is
    (anything else would become a retried connection error)."""

    class RedirectRefused(openai.OpenAIError):  # type: ignore[misc, name-defined]
        pass

    return RedirectRefused
