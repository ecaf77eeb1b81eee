"""Settings: Pi files, G-3 merge, G-4 errors, validation (D-13), env selection, secrets."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest

from compactd.compaction.settings import CompactionSettings
from compactd.engine.settings import (
    DEFAULT_MODEL,
    Settings,
    SettingsError,
    agent_dir,
    build_summarizer,
    context_window_for_model,
    is_reasoning_model,
    load_settings,
    max_output_tokens_for_model,
    merge_settings,
)
from compactd.summarize.base import SummaryKind, TransientError
from compactd.summarize.candidates import CandidateSummarizer
from compactd.summarize.extractive import ExtractiveSummarizer
from compactd.summarize.openai_chat import OpenAIChatSummarizer
from compactd.summarize.remote import RemoteHistorySummarizer
from tests.support.fake_openai import FakeOpenAI, Reply
from tests.support.summarizers import make_request

SECRET = "sk-live-TOPSECRET-abcdef123456"


@pytest.fixture
def dirs(tmp_path: Path) -> tuple[Path, Path]:
    home, cwd = tmp_path / "home", tmp_path / "project"
    home.mkdir()
    cwd.mkdir()
    return home, cwd


def write(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")


def global_file(home: Path) -> Path:
    return home / ".pi" / "agent" / "settings.json"


def project_file(cwd: Path) -> Path:
    return cwd / ".pi" / "settings.json"


def load(
    dirs: tuple[Path, Path], env: dict[str, str] | None = None, overrides: dict | None = None
) -> Settings:
    home, cwd = dirs
    return load_settings(cwd, overrides=overrides, env=env or {}, home=home)


# -- defaults and files ------------------------------------------------------------------------
def test_defaults_without_files(dirs) -> None:
    s = load(dirs)
    assert (s.compaction.enabled, s.compaction.reserve_tokens, s.compaction.keep_recent_tokens) == (
        True,
        16384,
        20000,
    )
    assert (s.compaction.auto_continue, s.compaction.remote_endpoint, s.compaction.remote_enabled) == (
        True,
        None,
        True,
    )
    assert (s.branch_summary.reserve_tokens, s.branch_summary.skip_prompt) == (16384, False)
    assert (s.retry.enabled, s.retry.max_retries, s.retry.base_delay_ms, s.retry.max_delay_ms) == (
        True,
        3,
        2000,
        60000,
    )
    assert (s.pruning.enabled, s.pruning.protect_tokens, s.pruning.minimum_savings) == (True, 40000, 20000)
    assert s.pruning.protected_tools == ("skill", "read")
    assert s.summarizer.backend == "auto" and s.summarizer.api_key_env == "OPENAI_API_KEY"
    assert s.context_window == 128000
    assert s.sources == () and s.errors == ()
    assert s.compaction_settings() == CompactionSettings(
        enabled=True, reserve_tokens=16384, keep_recent_tokens=20000
    )


def test_project_merges_over_global_one_level_deep(dirs) -> None:
    home, cwd = dirs
    write(
        global_file(home),
        {
            "compaction": {"enabled": False, "reserveTokens": 16384},
            "retry": {"maxRetries": 5, "provider": {"maxRetryDelayMs": 1000}},
            "theme": "dark",
        },
    )
    write(project_file(cwd), {"compaction": {"reserveTokens": 8192}, "retry": {"provider": {}}})
    s = load(dirs)
    assert s.compaction.enabled is False and s.compaction.reserve_tokens == 8192  # G-3 example
    assert s.retry.max_retries == 5
    assert s.retry.max_delay_ms == 60000  # retry.provider replaced wholesale: merge is one level only
    assert s.sources == (str(global_file(home)), str(project_file(cwd)))


def test_project_value_replaces_when_not_both_objects(dirs) -> None:
    home, cwd = dirs
    write(global_file(home), {"summarizer": {"candidates": [{"model": "a"}, {"model": "b"}], "model": "x"}})
    write(project_file(cwd), {"summarizer": {"candidates": [{"model": "c"}]}})
    s = load(dirs)
    assert [c.model for c in s.summarizer.candidates] == ["c"]
    assert s.summarizer.model == "x"


def test_merge_settings_rule() -> None:
    base = {"a": {"x": 1, "y": {"deep": 1}}, "b": [1], "c": 1}
    assert merge_settings(base, {"a": {"y": {"other": 2}}, "b": {"k": 1}, "d": 4}) == {
        "a": {"x": 1, "y": {"other": 2}},
        "b": {"k": 1},
        "c": 1,
        "d": 4,
    }
    assert merge_settings(base, None) == base


def test_agent_dir_from_env_with_tilde(dirs) -> None:
    home, cwd = dirs
    assert agent_dir({}, home) == home / ".pi" / "agent"
    assert agent_dir({"PI_CODING_AGENT_DIR": "~/custom/agent"}, home) == home / "custom" / "agent"
    write(home / "custom" / "agent" / "settings.json", {"compaction": {"keepRecentTokens": 1234}})
    s = load(dirs, env={"PI_CODING_AGENT_DIR": "~/custom/agent"})
    assert s.compaction.keep_recent_tokens == 1234


@pytest.mark.parametrize("content", ["{not json", "[1, 2, 3]"])
def test_unparsable_file_is_recorded_and_ignored(dirs, content: str) -> None:
    home, cwd = dirs
    write(global_file(home), content)
    write(project_file(cwd), {"compaction": {"keepRecentTokens": 5000}})
    s = load(dirs)
    assert s.compaction.keep_recent_tokens == 5000
    assert len(s.errors) == 1 and str(global_file(home)) in s.errors[0]
    assert global_file(home).read_text() == content  # never overwritten


def test_client_overrides_merge_last(dirs) -> None:
    home, cwd = dirs
    write(project_file(cwd), {"compaction": {"reserveTokens": 8000, "keepRecentTokens": 9000}})
    s = load(dirs, overrides={"compaction": {"keepRecentTokens": 100}, "pruning": {"enabled": False}})
    assert (s.compaction.reserve_tokens, s.compaction.keep_recent_tokens) == (8000, 100)
    assert s.pruning.enabled is False


def test_retry_provider_max_delay_is_read(dirs) -> None:
    s = load(dirs, overrides={"retry": {"provider": {"maxRetryDelayMs": 0}}})
    assert s.retry.max_delay_ms == 0
    assert s.retry_policy().max_delay_ms == 0


# -- validation --------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"compaction": {"reserveTokens": -1}}, "compaction.reserveTokens must be an integer >= 0"),
        ({"compaction": {"reserveTokens": "16384"}}, "compaction.reserveTokens must be an integer >= 0"),
        ({"compaction": {"keepRecentTokens": True}}, "compaction.keepRecentTokens must be an integer >= 0"),
        ({"compaction": {"enabled": "yes"}}, "compaction.enabled must be true or false"),
        (
            {"compaction": {"remoteEndpoint": "ftp://x"}},
            "compaction.remoteEndpoint must be an http:// or https:// URL",
        ),
        ({"retry": {"maxRetries": 1.5}}, "retry.maxRetries must be an integer >= 0"),
        ({"pruning": {"protectedTools": "read"}}, "pruning.protectedTools must be a list of tool names"),
        (
            {"summarizer": {"backend": "magic"}},
            "summarizer.backend must be one of: auto, openai, remote, extractive",
        ),
        (
            {"summarizer": {"backend": "remote"}},
            "summarizer.backend is 'remote' but compaction.remoteEndpoint is not set",
        ),
        ({"summarizer": {"timeoutSeconds": 0}}, "summarizer.timeoutSeconds must be a number > 0"),
        ({"summarizer": {"contextWindow": 0}}, "summarizer.contextWindow must be an integer >= 1"),
        ({"summarizer": {"maxConcurrency": 0}}, "summarizer.maxConcurrency must be an integer >= 1"),
        ({"summarizer": {"strictHeadings": "yes"}}, "summarizer.strictHeadings must be true or false"),
        (
            {"summarizer": {"candidates": [{"baseUrl": "http://x"}]}},
            "summarizer.candidates[0].model is required",
        ),
        ({"compaction": 5}, "compaction must be an object"),
    ],
)
def test_invalid_settings_name_the_key(dirs, overrides: dict, message: str) -> None:
    with pytest.raises(SettingsError) as info:
        load(dirs, overrides=overrides)
    assert str(info.value) == message
    assert info.value.key == message.split(" ")[0].split("(")[0].strip()


def test_invalid_value_in_a_file_is_an_error_too(dirs) -> None:
    home, cwd = dirs
    write(project_file(cwd), {"compaction": {"keepRecentTokens": -5}})
    with pytest.raises(SettingsError, match=r"^compaction\.keepRecentTokens must be an integer >= 0$"):
        load(dirs)


def test_integral_floats_and_nulls_are_accepted(dirs) -> None:
    s = load(dirs, overrides={"compaction": {"reserveTokens": 8192.0, "keepRecentTokens": None}})
    assert s.compaction.reserve_tokens == 8192 and s.compaction.keep_recent_tokens == 20000


@pytest.mark.parametrize(
    ("overrides", "section", "message"),
    [
        ({"compaction": {"reserveTokens": 200000}}, "compaction",
         "compaction.reserveTokens (200000) must be smaller than the context window (128000)"),
        ({"compaction": {"reserveTokens": 128000}}, "compaction",
         "compaction.reserveTokens (128000) must be smaller than the context window (128000)"),
        ({"branchSummary": {"reserveTokens": 40000}, "summarizer": {"contextWindow": 32000}}, "branchSummary",
         "branchSummary.reserveTokens (40000) must be smaller than the context window (32000)"),
    ],
)
def test_reserves_are_checked_where_they_are_used(dirs, overrides: dict, section: str, message: str) -> None:
    s = load(dirs, overrides=overrides)  # loading is fine: the reserve may never be used
    with pytest.raises(SettingsError) as info:
        s.check_reserve(section)  # type: ignore[arg-type]
    assert str(info.value) == message and info.value.key == f"{section}.reserveTokens"


def test_small_window_does_not_refuse_compaction_for_the_branch_summary_reserve(dirs) -> None:
    s = load(dirs, overrides={"summarizer": {"contextWindow": 4096}, "compaction": {"reserveTokens": 2000}})
    s.check_reserve("compaction")  # what compaction uses fits
    with pytest.raises(SettingsError, match=r"^branchSummary\.reserveTokens \(16384\) must be smaller"):
        s.check_reserve("branchSummary")  # refused only where a branch summary is made


def test_check_context_window_for_a_session_model(dirs) -> None:
    s = load(dirs)
    s.check_context_window(200000)
    with pytest.raises(
        SettingsError,
        match=r"compaction\.reserveTokens \(16384\) must be smaller than the context window \(8192\)",
    ):
        s.check_context_window(8192)


def test_key_pasted_into_api_key_env_is_rejected_without_echo(dirs) -> None:
    with pytest.raises(SettingsError) as info:
        load(dirs, overrides={"summarizer": {"apiKeyEnv": SECRET}})
    assert SECRET not in str(info.value) and "summarizer.apiKeyEnv" in str(info.value)
    with pytest.raises(SettingsError) as info2:
        load(dirs, overrides={"summarizer": {"apiKey": SECRET}})
    assert SECRET not in str(info2.value) and "summarizer.apiKeyEnv" in str(info2.value)


# -- model tables --------------------------------------------------------------------------------
def test_context_window_table() -> None:
    assert context_window_for_model("gpt-4o-mini") == 128000
    assert context_window_for_model("gpt-4.1-nano") == 1047576
    assert context_window_for_model("openai/gpt-5-mini") == 400000
    assert context_window_for_model("claude-sonnet-4-5") == 200000
    assert context_window_for_model("o3-mini") == 200000
    assert context_window_for_model("o1-mini") == 128000  # longest prefix wins
    assert context_window_for_model("Qwen2.5-Coder-7B") == 32768
    assert context_window_for_model("my-local-model") == 128000
    assert context_window_for_model(None) == 128000
    assert max_output_tokens_for_model("gpt-4o") == 16384 and max_output_tokens_for_model("llama3") == 0
    assert is_reasoning_model("o4-mini") and is_reasoning_model("gpt-5") and not is_reasoning_model("gpt-4o")


def test_context_window_follows_model_unless_configured(dirs) -> None:
    assert (
        load(
            dirs,
            overrides={
                "summarizer": {"model": "gpt-4"},
                "compaction": {"reserveTokens": 4000},
                "branchSummary": {"reserveTokens": 4000},
            },
        ).context_window
        == 8192
    )
    assert (
        load(dirs, overrides={"summarizer": {"model": "gpt-4", "contextWindow": 50000}}).context_window
        == 50000
    )


# -- environment and backend selection -----------------------------------------------------------
def test_nothing_configured_means_extractive(dirs) -> None:
    assert isinstance(build_summarizer(load(dirs), {}), ExtractiveSummarizer)


def test_openai_api_key_selects_openai(dirs) -> None:
    env = {"OPENAI_API_KEY": SECRET}
    summarizer = build_summarizer(load(dirs, env=env), env)
    assert isinstance(summarizer, OpenAIChatSummarizer)
    assert summarizer.config.model == DEFAULT_MODEL
    assert summarizer.config.base_url is None and summarizer.config.api_key_env == "OPENAI_API_KEY"


def test_openai_base_url_and_model_from_env(dirs) -> None:
    env = {"OPENAI_BASE_URL": "http://127.0.0.1:9999/v1", "COMPACTD_MODEL": "o4-mini"}
    summarizer = build_summarizer(load(dirs, env=env), env)
    assert isinstance(summarizer, OpenAIChatSummarizer)
    assert summarizer.config.base_url == "http://127.0.0.1:9999/v1"
    assert summarizer.config.model == "o4-mini"
    assert summarizer.config.reasoning is True and summarizer.config.max_output_tokens == 100000


def test_model_alone_does_not_select_openai(dirs) -> None:
    env = {"COMPACTD_MODEL": "gpt-4o"}
    assert isinstance(build_summarizer(load(dirs, env=env), env), ExtractiveSummarizer)


def test_file_base_url_beats_openai_base_url_but_compactd_model_beats_file(dirs) -> None:
    home, cwd = dirs
    write(project_file(cwd), {"summarizer": {"baseUrl": "http://127.0.0.1:1111/v1", "model": "file-model"}})
    env = {"OPENAI_BASE_URL": "http://127.0.0.1:2222/v1", "COMPACTD_MODEL": "env-model"}
    s = load(dirs, env=env)
    assert s.summarizer.base_url == "http://127.0.0.1:1111/v1"
    assert s.summarizer.model == "env-model"
    s2 = load(dirs, env=env, overrides={"summarizer": {"model": "client-model"}})
    assert s2.summarizer.model == "client-model"  # client overrides win over the environment


def test_compactd_summarizer_env_forces_backend(dirs) -> None:
    env = {"OPENAI_API_KEY": SECRET, "COMPACTD_SUMMARIZER": "extractive"}
    assert isinstance(build_summarizer(load(dirs, env=env), env), ExtractiveSummarizer)


def test_custom_key_variable_selects_openai(dirs) -> None:
    env = {"GROQ_KEY": SECRET}
    s = load(dirs, env=env, overrides={"summarizer": {"apiKeyEnv": "GROQ_KEY", "model": "llama-3.3-70b"}})
    summarizer = build_summarizer(s, env)
    assert isinstance(summarizer, OpenAIChatSummarizer) and summarizer.config.api_key_env == "GROQ_KEY"


def test_explicit_openai_backend_and_settings_values(dirs) -> None:
    s = load(
        dirs,
        overrides={
            "summarizer": {
                "backend": "openai",
                "model": "gpt-4o",
                "maxOutputTokens": 2048,
                "reasoning": False,
                "timeoutSeconds": 5,
                "isolationFields": False,
            }
        },
    )
    summarizer = build_summarizer(s, {})
    assert isinstance(summarizer, OpenAIChatSummarizer)
    cfg = summarizer.config
    assert (cfg.model, cfg.max_output_tokens, cfg.reasoning, cfg.timeout_seconds, cfg.isolation_fields) == (
        "gpt-4o",
        2048,
        False,
        5.0,
        False,
    )
    assert cfg.retry == s.retry_policy()


def test_robustness_settings_defaults_and_the_window_given_to_the_summarizer(dirs) -> None:
    s = load(dirs)
    assert (s.summarizer.max_concurrency, s.summarizer.strict_headings) == (2, False)
    assert s.to_dict()["summarizer"]["maxConcurrency"] == 2
    small = load(dirs, overrides={
        "compaction": {"reserveTokens": 2000}, "branchSummary": {"reserveTokens": 1000},
        "summarizer": {"backend": "openai", "model": "qwen2.5-0.5b", "contextWindow": 4096, "maxConcurrency": 1,
                       "strictHeadings": True},
    })
    assert (small.summarizer.max_concurrency, small.summarizer.strict_headings) == (1, True)
    summarizer = build_summarizer(small, {})
    assert isinstance(summarizer, OpenAIChatSummarizer) and summarizer.context_window == 4096
    # without contextWindow the known-model table decides
    table = build_summarizer(load(dirs, overrides={"summarizer": {"backend": "openai", "model": "qwen2.5"}}), {})
    assert isinstance(table, OpenAIChatSummarizer) and table.context_window == 32768
    cands = build_summarizer(load(dirs, overrides={"summarizer": {"candidates": [
        {"model": "a", "contextWindow": 9000}, {"model": "gpt-4o"}]}}), {})
    assert isinstance(cands, CandidateSummarizer) and cands.context_window == 9000  # the smallest


def test_remote_endpoint_serves_history_only(dirs) -> None:
    s = load(dirs, overrides={"compaction": {"remoteEndpoint": "http://127.0.0.1:9/compact"}})
    summarizer = build_summarizer(s, {})
    assert isinstance(summarizer, RemoteHistorySummarizer)
    assert summarizer.remote.endpoint == "http://127.0.0.1:9/compact"
    assert isinstance(summarizer.local, ExtractiveSummarizer)
    off = load(
        dirs,
        overrides={"compaction": {"remoteEndpoint": "http://127.0.0.1:9/compact", "remoteEnabled": False}},
    )
    assert isinstance(build_summarizer(off, {}), ExtractiveSummarizer)


def test_candidates_inherit_connection_settings(dirs) -> None:
    s = load(
        dirs,
        overrides={
            "summarizer": {
                "baseUrl": "http://127.0.0.1:7000/v1",
                "apiKeyEnv": "MY_KEY",
                "candidates": [
                    {"model": "small"},
                    {"model": "big", "baseUrl": "http://127.0.0.1:7001/v1", "apiKeyEnv": "BIG"},
                ],
            }
        },
    )
    summarizer = build_summarizer(s, {})
    assert isinstance(summarizer, CandidateSummarizer)
    configs = [c.config for c in summarizer.candidates]
    assert [(c.model, c.base_url, c.api_key_env) for c in configs] == [
        ("small", "http://127.0.0.1:7000/v1", "MY_KEY"),
        ("big", "http://127.0.0.1:7001/v1", "BIG"),
    ]


def test_api_key_never_in_repr_or_dump(dirs) -> None:
    env = {"OPENAI_API_KEY": SECRET, "OPENAI_BASE_URL": "http://127.0.0.1:9/v1"}
    s = load(dirs, env=env)
    summarizer = build_summarizer(s, env)
    for text in (
        repr(s),
        str(s),
        json.dumps(s.to_dict()),
        s.model_dump_json(),
        repr(summarizer),
        repr(summarizer.config),
    ):
        assert SECRET not in text
    assert s.to_dict()["summarizer"]["apiKeyEnv"] == "OPENAI_API_KEY"


# -- end to end with the fake server -------------------------------------------------------------
def test_settings_drive_a_real_summarization(dirs) -> None:
    with FakeOpenAI() as fake:
        fake.default = Reply.error(500, "boom", type="server_error")
        env = {"OPENAI_BASE_URL": fake.url, "OPENAI_API_KEY": SECRET, "COMPACTD_MODEL": "gpt-4o"}
        s = load(dirs, env=env, overrides={"retry": {"maxRetries": 1, "baseDelayMs": 1}})
        summarizer = build_summarizer(s, env)
        with pytest.raises(TransientError):
            asyncio.run(summarizer.summarize(make_request(max_tokens=50000)))
        assert len(fake.requests) == 2  # 1 + retry.maxRetries
        body = fake.requests[0].body
        assert body["model"] == "gpt-4o" and body["max_tokens"] == 16384  # capped by the model's output limit
        assert fake.requests[0].headers["authorization"] == f"Bearer {SECRET}"

        fake.default = Reply.stream("## Goal\nok")
        result = asyncio.run(summarizer.summarize(make_request(kind=SummaryKind.BRANCH)))
        assert result.text == "## Goal\nok"


# -- the daemon's cache ------------------------------------------------------------------------
def test_settings_cache_answers_from_memory_until_a_file_or_the_environment_changes(dirs) -> None:
    from compactd.engine.settings import SettingsCache

    home, cwd = dirs
    env: dict[str, str] = {}
    cache = SettingsCache(env=env, home=home)
    first = cache.load(cwd)
    assert cache.load(cwd) is first  # nothing read or validated again
    write(project_file(cwd), {"compaction": {"keepRecentTokens": 1234}})
    edited = cache.load(cwd)
    assert edited.compaction.keep_recent_tokens == 1234
    # an edit of the same size still applies (the signature includes the change time)
    write(project_file(cwd), {"compaction": {"keepRecentTokens": 4321}})
    assert cache.load(cwd).compaction.keep_recent_tokens == 4321
    write(global_file(home), {"compaction": {"reserveTokens": 999}})
    assert cache.load(cwd).compaction.reserve_tokens == 999
    env["COMPACTD_MODEL"] = "gpt-4o"
    assert cache.load(cwd).summarizer.model == "gpt-4o"
    assert cache.load(cwd, {"compaction": {"enabled": False}}).compaction.enabled is False
    assert cache.load(cwd).compaction.enabled is True
    project_file(cwd).unlink()
    assert cache.load(cwd).compaction.keep_recent_tokens == 20000


def test_settings_cache_knows_overrides_and_cwds_again(dirs) -> None:
    from compactd.engine.settings import SettingsCache

    home, cwd = dirs
    cache = SettingsCache(env={}, home=home)
    # the daemon passes one overrides object on every request: known again by identity
    overrides = {"compaction": {"keepRecentTokens": 777}}
    by_overrides = cache.load(cwd, overrides)
    assert by_overrides.compaction.keep_recent_tokens == 777 and cache.load(cwd, overrides) is by_overrides
    assert cache.load(cwd, {"compaction": {"keepRecentTokens": 777}}) is by_overrides  # equal content
    assert cache.load(cwd, {"compaction": {"keepRecentTokens": 778}}).compaction.keep_recent_tokens == 778
    other = cwd / "sub"
    write(project_file(other), {"compaction": {"keepRecentTokens": 555}})
    assert cache.load(other, overrides).compaction.keep_recent_tokens == 777  # overrides win
    assert cache.load(other).compaction.keep_recent_tokens == 555  # that cwd's own file
    assert cache.load(cwd).compaction.keep_recent_tokens == 20000


def test_settings_cache_keeps_settings_from_files_older_than_a_second(dirs) -> None:
    import os

    from compactd.engine.settings import SettingsCache

    home, cwd = dirs
    cache = SettingsCache(env={}, home=home)
    write(project_file(cwd), {"compaction": {"keepRecentTokens": 1234}})
    assert cache.load(cwd) is not cache.load(cwd)  # just written: a same-size edit may follow
    old = project_file(cwd).stat().st_mtime - 5
    os.utime(project_file(cwd), (old, old))
    time.sleep(1.1)  # the change time moved with utime
    kept = cache.load(cwd)
    assert kept.compaction.keep_recent_tokens == 1234 and cache.load(cwd) is kept
    write(project_file(cwd), {"compaction": {"keepRecentTokens": 4321}})  # same size, new times
    assert cache.load(cwd).compaction.keep_recent_tokens == 4321


def test_settings_cache_never_keeps_invalid_settings(dirs) -> None:
    from compactd.engine.settings import SettingsCache

    home, cwd = dirs
    cache = SettingsCache(env={}, home=home)
    write(project_file(cwd), {"compaction": {"reserveTokens": "lots"}})
    for _ in range(2):
        with pytest.raises(SettingsError) as err:
            cache.load(cwd)
        assert err.value.key == "compaction.reserveTokens"
    write(project_file(cwd), {"compaction": {"reserveTokens": 100}})
    assert cache.load(cwd).compaction.reserve_tokens == 100
