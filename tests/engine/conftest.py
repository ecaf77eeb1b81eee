"""Engine tests talk to a real local OpenAI-compatible server (tests/support/fake_openai.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.fake_openai import FakeOpenAI


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    server = FakeOpenAI().start()
    try:
        yield server
    finally:
        server.stop()
