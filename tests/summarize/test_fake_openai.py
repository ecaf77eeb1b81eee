"""The shared fake OpenAI server behaves as documented (other test suites rely on it)."""

from __future__ import annotations

import json
import time
import urllib.request

import openai

from tests.support.fake_openai import FakeOpenAI, Reply


def post(url: str, body: dict) -> tuple[int, bytes]:
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"content-type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as err:
        return err.code, err.read()


def test_sync_use_queue_then_default_and_recording() -> None:
    with FakeOpenAI(default=Reply.json({"summary": "default"})) as fake:
        fake.queue(Reply.json({"summary": "queued"}), Reply.error(418, "teapot"))
        assert post(fake.base + "/a", {"n": 1}) == (200, b'{"summary": "queued"}')
        status, body = post(fake.base + "/b", {"n": 2})
        assert status == 418 and json.loads(body)["error"]["message"] == "teapot"
        assert post(fake.base + "/c", {"n": 3})[1] == b'{"summary": "default"}'
        assert [(r.path, r.body) for r in fake.requests] == [("/a", {"n": 1}), ("/b", {"n": 2}), ("/c", {"n": 3})]
        # the server counts a reply after its last byte is written, which may be just after we read it
        deadline = time.monotonic() + 10
        while fake.completed < 3 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert fake.completed == 3 and not fake.disconnected.is_set()


def test_script_routes_by_request() -> None:
    with FakeOpenAI() as fake:
        fake.script(lambda req: Reply.json({"summary": req.body["prompt"].upper()}) if req.path == "/up" else None)
        fake.queue(Reply.json({"summary": "from queue"}))
        assert post(fake.base + "/up", {"prompt": "abc"})[1] == b'{"summary": "ABC"}'
        assert post(fake.base + "/other", {"prompt": "abc"})[1] == b'{"summary": "from queue"}'
        fake.reset()
        assert fake.requests == [] and fake.completed == 0


def test_non_streamed_chat_completion_for_the_sync_sdk() -> None:
    with FakeOpenAI() as fake:
        fake.queue(Reply.stream(["Hello ", "there"]))
        client = openai.OpenAI(base_url=fake.url, api_key="k", max_retries=0)
        completion = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
        assert completion.choices[0].message.content == "Hello there"
        assert completion.choices[0].finish_reason == "stop"
        assert completion.usage.prompt_tokens == 1200
        client.close()


# -- emulated server quirks, checked on the wire -----------------------------------------------------
CHAT = {"model": "m", "stream": True, "stream_options": {"include_usage": True},
        "messages": [{"role": "user", "content": " ".join(["word"] * 300)}]}


def events(raw: bytes) -> list[str]:
    return [block for block in raw.decode().split("\n\n") if block.strip()]


def test_wire_llama_cpp_legacy_overflow_is_an_error_field_then_done() -> None:
    with FakeOpenAI(context_window=100, overflow_style="llama.cpp-legacy") as fake:
        status, raw = post(fake.url + "/chat/completions", CHAT)
    blocks = events(raw)
    assert status == 200 and blocks[-1] == "data: [DONE]"
    assert blocks[-2].startswith("error: ")  # llama-server's non-standard SSE field, not `data:`
    error = json.loads(blocks[-2][len("error: "):])
    assert error["code"] == 400 and "exceeds the available context size" in error["message"]
    assert fake.overflows == 1 and fake.prompt_tokens == [300]


def test_wire_llama_cpp_and_vllm_legacy_overflow_shapes() -> None:
    with FakeOpenAI(context_window=100, overflow_style="llama.cpp") as fake:
        _, raw = post(fake.url + "/chat/completions", CHAT)
    error = json.loads(events(raw)[-2][len("data: "):])["error"]
    assert error["type"] == "exceed_context_size_error" and (error["n_prompt_tokens"], error["n_ctx"]) == (300, 100)
    with FakeOpenAI(context_window=100, overflow_style="vllm-legacy") as fake:
        _, raw = post(fake.url + "/chat/completions", {**CHAT, "max_tokens": 50})
    error = json.loads(events(raw)[-2][len("data: "):])
    assert error["object"] == "error" and "maximum context length is 100 tokens" in error["message"]
    assert "350 tokens (300 in the messages, 50 in the completion)" in error["message"]
    with FakeOpenAI(context_window=100, overflow_style="http") as fake:
        status, raw = post(fake.url + "/chat/completions", CHAT)
    assert status == 400 and "available context size (100 tokens)" in json.loads(raw)["error"]["message"]


def test_wire_server_that_ignores_include_usage_sends_no_usage_chunk() -> None:
    with FakeOpenAI(report_usage=False) as fake:
        _, raw = post(fake.url + "/chat/completions", CHAT)
    assert b'"usage"' not in raw and events(raw)[-1] == "data: [DONE]"
    with FakeOpenAI() as fake:
        _, raw = post(fake.url + "/chat/completions", CHAT)
    assert b'"usage"' in raw
