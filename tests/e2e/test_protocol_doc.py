"""protocol.md is the contract: every registered method, notification, server request and error
code must be documented there (each method with its own heading and a JSON example)."""

from __future__ import annotations

import re
from pathlib import Path

from compactd.rpc.errors import Code
from compactd.rpc.handlers import create_server
from compactd.rpc.server import METHODS, NOTIFICATIONS, SERVER_REQUESTS

PROTOCOL = Path(__file__).resolve().parents[2] / "protocol.md"


def headings() -> set[str]:
    text = PROTOCOL.read_text(encoding="utf-8")
    return {m.group(1) for m in re.finditer(r"^#{2,4} `([^`]+)`", text, flags=re.MULTILINE)}


def test_every_registered_method_is_documented() -> None:
    server = create_server()
    registered = {name for name in server.protocol.fm.features if name.startswith("session/")}
    assert registered == set(METHODS) and len(METHODS) == 18
    documented = headings()
    missing = sorted((registered | set(NOTIFICATIONS) | set(SERVER_REQUESTS)) - documented)
    assert not missing, f"not documented in protocol.md: {missing}"


def test_every_error_code_is_documented() -> None:
    text = PROTOCOL.read_text(encoding="utf-8")
    rows = dict(re.findall(r"^\| `(-?\d+)` \| `([A-Za-z]+)`", text, flags=re.MULTILINE))
    for code in Code:
        assert str(int(code)) in rows, f"error code {code.name} ({int(code)}) missing from protocol.md"


def test_every_method_section_has_a_json_example() -> None:
    text = PROTOCOL.read_text(encoding="utf-8")
    sections = re.split(r"^#{2,4} `", text, flags=re.MULTILINE)[1:]
    for section in sections:
        name = section.split("`", 1)[0]
        if name in METHODS:
            assert "```json" in section, f"{name}: no JSON example"
