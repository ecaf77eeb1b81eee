"""pytest-lsp fixtures: a real `python -m compactd serve` subprocess per test, and the fake
OpenAI-compatible server it talks to."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import pytest_lsp
from pytest_lsp import ClientServerConfig

from tests.support.fake_openai import FakeOpenAI

from .helpers import SERVER_COMMAND, TestClient, make_client, server_env


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER_COMMAND, client_factory=make_client,
                                              server_env=server_env()))
async def client(lsp_client: TestClient):
    yield
    await lsp_client.shutdown_session()


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    server = FakeOpenAI().start()
    try:
        yield server
    finally:
        server.stop()
