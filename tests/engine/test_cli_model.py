"""`compactd compact` against an emulated model server, as a real subprocess: the model flags,
the usage line, and the server's own error text on failure."""

from __future__ import annotations

import json
from pathlib import Path

from compactd.session import Session

from tests.support.fake_openai import FakeOpenAI, RecordedRequest, Reply

from .builders import HISTORY_TEXT, PREFIX_TEXT
from .test_cli import run_cli
from .test_model_robustness import long_session


def reply_by_kind(request: RecordedRequest) -> Reply:
    kind = request.headers.get("x-compactd-request-kind")
    return Reply.stream(HISTORY_TEXT if kind == "history" else PREFIX_TEXT)


def test_model_flags_override_the_settings_and_estimated_usage_is_worded_as_such(tmp_path: Path) -> None:
    session = long_session(tmp_path, turns=6, words=60)
    with FakeOpenAI(report_usage=False) as fake:
        fake.script(reply_by_kind)
        proc = run_cli(tmp_path, "compact", session.path, "--base-url", fake.url, "--model", "qwen-tiny",
                       "--keep-recent-tokens", "300", "--reserve-tokens", "3000")
    assert proc.returncode == 0, proc.stderr
    bodies = [r.body for r in fake.requests]
    assert bodies and all(b["model"] == "qwen-tiny" for b in bodies)
    history = [b for r, b in zip(fake.requests, bodies) if r.headers["x-compactd-request-kind"] == "history"]
    assert history[0]["max_tokens"] == 2400  # floor(0.8 × --reserve-tokens)
    usage_line = next(line for line in proc.stdout.splitlines() if line.startswith("usage"))
    assert "estimated" in usage_line and "about input" in usage_line
    assert "no model was called" not in proc.stdout
    entry = Session.open(session.path).entries[-1]
    assert entry["type"] == "compaction" and entry["usage"]["estimated"] is True


def test_keep_recent_tokens_flag_moves_the_cut(tmp_path: Path) -> None:
    session = long_session(tmp_path, turns=6, words=60)
    out = run_cli(tmp_path, "compact", session.path, "--keep-recent-tokens", "300", "--json")
    assert out.returncode == 0, out.stderr
    kept_300 = json.loads(out.stdout)["firstKeptEntryId"]
    ids = [e["id"] for e in Session.open(session.path).entries]
    # with 300 tokens kept the cut lands in the last turns (the default 20000 would keep everything)
    assert ids.index(kept_300) > len(ids) // 2


def test_embedded_summarizer_says_no_model_was_called(tmp_path: Path) -> None:
    session = long_session(tmp_path, turns=6, words=60)
    proc = run_cli(tmp_path, "compact", session.path, "--keep-recent-tokens", "300")
    assert proc.returncode == 0, proc.stderr
    assert "usage              none (no model was called)" in proc.stdout


def test_the_servers_error_text_reaches_the_command_line(tmp_path: Path) -> None:
    session = long_session(tmp_path, turns=6, words=60)
    before = Path(session.path).read_bytes()
    with FakeOpenAI(context_window=500, overflow_style="llama.cpp-legacy") as fake:
        proc = run_cli(tmp_path, "compact", session.path, "--base-url", fake.url, "--keep-recent-tokens", "300")
    assert proc.returncode != 0
    assert "the request exceeds the available context size" in proc.stderr  # llama-server's own words
    assert "ended before" not in proc.stderr and len(fake.requests) == 1
    assert Path(session.path).read_bytes() == before


def test_bad_flag_value_is_refused(tmp_path: Path) -> None:
    session = long_session(tmp_path, turns=2, words=10)
    proc = run_cli(tmp_path, "compact", session.path, "--reserve-tokens", "0")
    assert proc.returncode == 2 and "--reserve-tokens" in proc.stderr and ">= 1" in proc.stderr


def test_readme_small_server_recipe_runs_as_written(tmp_path: Path) -> None:
    """The README's small-server command, taken from the README, against a server with a 4096-token
    window. Before: refused at once, branchSummary.reserveTokens (16384) not below the window."""
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    block = readme.split("<!-- issue 13 §3: small local servers -->", 1)[1].split("```", 2)[1]
    argv = block.replace("\\\n", " ").split()
    assert argv[:3] == ["compactd", "compact", "session.jsonl"] and "--context-window" in argv
    session = long_session(tmp_path, turns=30, words=120)
    with FakeOpenAI(context_window=4096, overflow_style="llama.cpp") as fake:
        fake.script(reply_by_kind)
        args = [session.path if a == "session.jsonl" else fake.url if a.startswith("http://127.0.0.1:8080")
                else a for a in argv[1:]]
        proc = run_cli(tmp_path, *args)
    assert proc.returncode == 0, proc.stderr
    assert fake.overflows == 0 and max(fake.prompt_tokens) < 4096  # every prompt fitted the window
    assert Session.open(session.path).entries[-1]["type"] == "compaction"
