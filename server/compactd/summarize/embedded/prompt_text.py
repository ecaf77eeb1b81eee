"""Fallback input: the serialized `<conversation>` of a prompt, parsed back into messages (best effort)."""

from __future__ import annotations

import json
import re
from typing import Any

from .commands import looks_failed

_PART = re.compile(
    r"^\[(User|Assistant|Assistant thinking|Assistant tool calls|Tool result|Developer)\]: ", re.M
)
_CALL = re.compile(r"(?:^|; )([\w.-]+)\(")
_ARG = re.compile(r'(\w+)=("(?:[^"\\]|\\.)*"|[^,)]*)')


def messages_from_prompt(prompt: str) -> list[dict[str, Any]]:
    m = re.search(r"<conversation>\n(.*?)\n</conversation>", prompt, re.DOTALL)
    if not m:
        return []
    body = m.group(1)
    heads = list(_PART.finditer(body))
    messages: list[dict[str, Any]] = []
    queue: list[str] = []
    n = 0
    for i, h in enumerate(heads):
        text = body[h.end() : heads[i + 1].start() if i + 1 < len(heads) else len(body)].rstrip("\n")
        label = h.group(1)
        if label == "User":
            messages.append({"role": "user", "content": text})
        elif label == "Assistant":
            messages.append({"role": "assistant", "content": [{"type": "text", "text": text}]})
        elif label == "Assistant tool calls":
            blocks = []
            for cm in _CALL.finditer(text):
                args: dict[str, Any] = {}
                tail = text[cm.end() :]
                for am in _ARG.finditer(tail.split("); ")[0]):
                    try:
                        args[am.group(1)] = json.loads(am.group(2))
                    except ValueError:
                        args[am.group(1)] = am.group(2)
                n += 1
                blocks.append({"type": "toolCall", "id": f"p{n}", "name": cm.group(1), "arguments": args})
                queue.append(f"p{n}")
            messages.append({"role": "assistant", "content": blocks})
        elif label == "Tool result":
            cid = queue.pop(0) if queue else f"orphan{i}"
            messages.append(
                {
                    "role": "toolResult",
                    "toolCallId": cid,
                    "content": [{"type": "text", "text": text}],
                    "isError": looks_failed(text),
                }
            )
    return messages

