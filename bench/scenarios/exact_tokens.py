"""Exact token counting (`TokenCounter.count_message` over a context's messages, as tokenStats
does) against raw tiktoken `encode_ordinary` of the same texts: the overhead of our counting."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from compactd.compaction.exact_tokens import _message_texts, get_counter
from compactd.session import Session, build_session_context, convert_to_llm

from bench import Case, Context, scenario


@scenario("exact_tokens", description="exact token counting vs raw tiktoken on the same text (MB/s of text)")
def exact_tokens(ctx: Context) -> Iterator[Case]:
    label, size = ctx.sizes()[min(1, len(ctx.sizes()) - 1)]  # 10 MB (smoke: the only size)
    session = Session.open(ctx.session_file(size))
    messages = convert_to_llm(build_session_context(session.entries, session.leaf_id, session.by_id).messages)
    counter = get_counter("gpt-4o")
    encoding: Any = counter._encoding
    texts = [t for m in messages for t in _message_texts(m)[0]]
    mb = sum(len(t.encode()) for t in texts) / 1e6
    result: dict[str, Any] = {}

    def keep(r: dict[str, Any]) -> None:
        result.update(r)

    def derive(r: dict[str, Any]) -> None:
        r.setdefault("derived", {})["ours/raw"] = round(r["median"] / result["median"], 2)

    yield Case(f"raw tiktoken {label} context ({counter.name})",
               lambda: sum(len(encoding.encode_ordinary(t)) for t in texts), work=mb, after=keep,
               extra={"messages": len(messages), "texts": len(texts)})
    yield Case(f"count_message {label} context ({counter.name})",
               lambda: sum(counter.count_message(m) for m in messages), work=mb, after=derive)
