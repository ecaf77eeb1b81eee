"""The embedded summarizer on read-only exploration and review work, where the substance is what the
agent read and found (issue 25), and on text that is not English. Synthetic sessions only."""

from __future__ import annotations

from compactd.summarize.embedded.commands import commit_body, commit_message
from compactd.summarize.embedded.edits import describe_read
from compactd.summarize.extractive import extract_summary
from tests.support.summarizers import make_request

from .test_extractive import assistant, call, result, section, text, user


def summarize(msgs: list) -> str:
    return extract_summary(make_request(messages=msgs))


# -- commits -----------------------------------------------------------------------------------
def test_a_commit_message_given_as_a_here_document_is_read_from_its_body() -> None:
    command = ("git add src && git commit -m \"$(cat <<'EOF'\nfeat(queue): retry failed jobs with backoff\n\n"
               "Jobs that raise are retried three times, doubling the delay. Nothing else changes.\n\n"
               "Co-Authored-By: someone\nEOF\n)\"")
    assert commit_message(command) == "feat(queue): retry failed jobs with backoff"
    assert commit_body(command) == "Jobs that raise are retried three times, doubling the delay."
    msgs = [
        user("Make failed jobs retry"),
        assistant(call("c", "bash", command=command)),
        result("c", "bash", "[main 1a2b3c4] feat(queue): retry failed jobs with backoff\n 1 file changed"),
    ]
    done = section(summarize(msgs), "### Done")
    assert ('Committed "feat(queue): retry failed jobs with backoff" (1a2b3c4 on `main`) — Jobs that raise are '
            "retried three times, doubling the delay.") in done
    assert "cat <<" not in done


# -- what was read -----------------------------------------------------------------------------
_ROUTER = '''defmodule Shop.Router do
  use Phoenix.Router

  scope "/", Shop do
    get "/", HomeController, :index
    live "/orders/:id", OrderLive
  end
end
'''

_SETTINGS = '''# Settings for the local server
import Config

config :shop, Shop.Endpoint,
  http: [port: 4321],
  secret: "a-very-long-placeholder-secret-that-nobody-should-read-in-full"
config :shop, queues: []
'''


def test_a_read_router_names_its_routes_and_what_it_builds_on() -> None:
    assert describe_read("lib/shop/router.ex", _ROUTER) == (
        "defines Shop.Router; uses Phoenix.Router; routes / → HomeController, /orders/:id → OrderLive")


def test_a_read_config_file_says_what_it_sets() -> None:
    note = describe_read("config/dev.exs", _SETTINGS)
    assert note.startswith("“Settings for the local server”; sets config :shop, Shop.Endpoint, http: [port: 4321]")
    assert "queues: []" in note
    assert "nobody" not in note  # a long string value is elided


def test_a_script_names_the_packages_it_imports_not_its_relative_modules() -> None:
    js = 'import { Chart } from "chart.js"\nimport "./local.css"\nconst { readFile } = require("fs")\n'
    assert describe_read("web/app.js", js) == "uses chart.js, fs"


def test_an_exploration_keeps_what_each_read_file_is_and_why_one_could_not_be_read() -> None:
    root = "/home/dev/proj/shop"
    msgs = [user("Explore this project and tell me how the web layer is wired. Read every relevant file.")]
    msgs += [assistant(call("r", "read", path=f"{root}/lib/shop/router.ex")), result("r", "read", _ROUTER)]
    msgs += [assistant(call("s", "read", path=f"{root}/config/dev.exs")), result("s", "read", _SETTINGS)]
    msgs += [assistant(call("b", "read", path=f"{root}/priv/static/bundle.js")),
             result("b", "read", "<tool_use_error>File content (900KB) exceeds maximum allowed size (256KB).</tool_use_error>",
                    is_error=True)]
    for i in range(14):  # more reads than an editing session keeps notes for
        msgs += [assistant(call(f"m{i}", "read", path=f"{root}/lib/shop/mod{i}.ex")),
                 result(f"m{i}", "read", f"defmodule Shop.Mod{i} do\n  @moduledoc \"Handles part {i} of the shop.\"\nend\n")]
    critical = section(summarize(msgs), "## Critical Context")
    assert "Read lib/shop/router.ex: defines Shop.Router; uses Phoenix.Router; routes / → HomeController" in critical
    assert ("Read config/dev.exs: “Settings for the local server”; sets config :shop, Shop.Endpoint, http: [port: 4321]"
            in critical)
    assert "Read priv/static/bundle.js: could not be read: File content (900KB) exceeds maximum allowed size" in critical
    assert "Handles part 0 of the shop." in critical  # read-only work keeps more of what was read


# -- what a written document says ---------------------------------------------------------------
_DESIGN = '''# Cache design

## Summary

We keep a **two-level cache**: an in-process LRU in front of a shared store.

## Eviction

Entries leave the cache when:
- they are older than `ttl_seconds`;
- the process runs short of memory;
- a write invalidates them.

## Sequence

```mermaid
sequenceDiagram
  A->>B: get
```

## Rollout

1. Ship behind the `cache_v2` flag.
2. Turn it on for reads only.
3. Remove the old path.
'''


def test_a_written_document_is_described_section_by_section() -> None:
    msgs = [
        user("Write up the cache design in docs/cache.md"),
        assistant(call("w", "write", path="docs/cache.md", content=_DESIGN)),
        result("w", "write", "ok"),
    ]
    done = section(summarize(msgs), "### Done")
    assert "- [x] cache.md — “Summary”: We keep a two-level cache: an in-process LRU in front of a shared store." in done
    assert ("- [x] cache.md — “Eviction”: Entries leave the cache when: they are older than `ttl_seconds`; "
            "the process runs short of memory; a write invalidates them.") in done
    assert "- [x] cache.md — other sections: “Sequence”" in done  # a diagram alone: named, not quoted
    assert "“Rollout”: Ship behind the `cache_v2` flag; Turn it on for reads only; Remove the old path." in done


# -- findings marked by layout -----------------------------------------------------------------
def test_a_statement_under_a_bold_label_mid_work_is_a_finding_in_any_language() -> None:
    msgs = [
        user("Smoke-test the settings page in the browser"),
        assistant(text("🐞 **Bug found**: the saved theme key is `app-app-theme` — the helper adds the prefix a second time.\n"
                       "**0 warnings** in the console so far."),
                  call("a", "bash", command="npm run e2e")),
        result("a", "bash", "ok"),
        assistant(text("**原因**：测试用同一个函数写入和读取键名，所以没有发现重复的前缀。"), call("b", "bash", command="npm run e2e")),
        result("b", "bash", "ok"),
    ]
    critical = section(summarize(msgs), "## Critical Context")
    assert "- Finding: Bug found: the saved theme key is `app-app-theme` — the helper adds the prefix a second time." in critical
    assert "- Finding: 原因: 测试用同一个函数写入和读取键名，所以没有发现重复的前缀。" in critical
    assert "0 warnings" not in critical  # bold without a colon labels nothing


def test_headings_inside_fenced_code_are_not_sections_of_a_document() -> None:
    doc = ("# Setup\n\n## Install\n\nRun the installer from the release page first.\n\n"
           "```bash\n# copy the sample env file\ncp a b\n```\n\n## Use\n\nStart the server and open the dashboard.\n")
    msgs = [user("Write the setup guide"), assistant(call("w", "write", path="SETUP.md", content=doc)),
            result("w", "write", "ok")]
    done = section(summarize(msgs), "### Done")
    assert "sections “Install”, “Use”" in done
    assert "copy the sample" not in done


# -- what searches, records and diffs showed -------------------------------------------------------
_PR_DIFF = '''diff --git a/cli/main.go b/cli/main.go
index 1111111..2222222 100644
--- a/cli/main.go
+++ b/cli/main.go
@@ -10,6 +10,10 @@ func validate() error {
 	if verbose && quiet {
 		return errors.New("pick one")
 	}
+	// Reject a dry run that would also upload
+	if dryRun && upload {
+		return errors.New("cannot combine --dry-run with --upload, they contradict each other")
+	}
 	return nil
 }
-	legacy := true
'''


def test_a_review_keeps_what_the_diff_adds_the_pr_record_and_an_empty_search() -> None:
    msgs = [
        user("Review pull request 42 and tell me what it changes"),
        assistant(call("v", "bash", command="gh pr view 42 --json title,author,additions,deletions")),
        result("v", "bash", '{"additions":4,"author":{"id":"MDQ6VXNlcjEyMzQ1Njc4OTA=","login":"octo"},"deletions":1,'
                            '"title":"Reject dry-run uploads"}'),
        assistant(call("d", "bash", command="gh pr diff 42")),
        result("d", "bash", _PR_DIFF),
        assistant(text("Let me check for tests of the validation."), call("g", "grep", pattern="func TestValidate", path="./")),
        result("g", "grep", "No files found"),
    ]
    critical = section(summarize(msgs), "## Critical Context")
    assert ("Looked: `gh pr view 42 --json title,author,additions,deletions` → additions: 4; author.login: octo; "
            "deletions: 1; title: Reject dry-run uploads") in critical  # the opaque id is left out
    assert ("Looked: `gh pr diff 42` → cli/main.go (+4/-1): comments “Reject a dry run that would also upload”; "
            "messages “cannot combine --dry-run with --upload, they contradict each other”") in critical
    assert 'Looked: `grep "func TestValidate" ./` → No files found' in critical


# -- text that is not English -------------------------------------------------------------------
def test_a_chinese_message_is_not_repeated_under_user_messages_where_goal_quotes_it() -> None:
    task = ("继续做 web 前端的 GUI 层的拆分工作。目标:在 web/ 和 shared/ 里删掉 multi-tenant 代码 + 加一个 first-run wizard。\n\n"
            "切一个 worktree 隔离这条线,分支叫 web-strip。\n\n不要碰服务端的目录,那是另一个分支的工作。")
    msgs = [user(task), assistant(text("好的,先看一下目录结构。"), call("l", "bash", command="ls web"))]
    summary = summarize(msgs)
    said = section(summary, "## User Messages")
    assert "目标:在 web/ 和 shared/ 里删掉 multi-tenant 代码" in section(summary, "## Goal")
    assert "删掉 multi-tenant" not in said  # quoted under Goal: not repeated
    assert said == "- 不要碰服务端的目录,那是另一个分支的工作。"  # what Goal does not quote stays


def test_json_and_diff_digests_stay_small_on_big_or_odd_output() -> None:
    from compactd.summarize.embedded.reads import diff_digest, json_fields

    assert json_fields("[" * 5000 + "]" * 5000) == ""  # nested past what the parser takes: not a record
    assert json_fields("{not json") == "" and json_fields("plain text") == ""
    record = json_fields('{"items": [' + ", ".join(f'{{"name": "item number {i}"}}' for i in range(500)) + "]}")
    assert record.startswith("items.name: item number 0; items.name: item number 1; items.name: item number 2")
    many = "".join(f'diff --git a/f{i}.py b/f{i}.py\n+++ b/f{i}.py\n+print("step {i} of the run")\n' for i in range(40))
    digest = diff_digest(many)
    assert digest.endswith("(+34 files)") and len(digest) <= 600


# -- fitting the budget -----------------------------------------------------------------------------
def test_under_a_tight_budget_one_long_line_goes_before_several_short_ones_of_its_rank() -> None:
    from compactd.summarize.base import SummaryKind
    from compactd.summarize.embedded.render import Lines, fit
    from compactd.summarize.embedded.sectionkeys import DONE

    lines = Lines()
    lines.add(DONE, [f"Fixed parser case {i}: quoted commas in field {i}" for i in range(6)])
    lines.add(DONE, ["Ran the full import of the archive and " + "looked through every table it produced; " * 12])
    out = fit(SummaryKind.HISTORY, lines.items, 150)
    for i in range(6):
        assert f"Fixed parser case {i}: quoted commas in field {i}" in out
    assert "Ran the full import" not in out
