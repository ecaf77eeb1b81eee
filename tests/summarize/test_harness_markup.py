"""Sessions as coding-agent harnesses write them (issue 25): injected reminders, slash commands, the
user's own shell commands, interruptions, a call declined at the permission prompt, the agent's task
list, a plan approved before work starts, a sub-agent's report — and the user's messages, condensed,
in their own words. Every session here is synthetic, written for the test."""

from __future__ import annotations

from compactd.summarize.embedded.dialog import condense
from compactd.summarize.embedded.markup import declined, read_user
from compactd.summarize.extractive import extract_summary
from tests.support.summarizers import make_request

from .test_extractive import assistant, call, result, section, text, user

REMINDER = ("<system-reminder>\nThe task list is empty. DO NOT mention this to the user. Never use emojis."
            "\n</system-reminder>")


def summarize(msgs: list) -> str:
    return extract_summary(make_request(messages=msgs))


def test_injected_reminders_are_not_the_users_words() -> None:
    msgs = [
        user("Add a --dry-run flag to the sync command in cli/sync.py\n" + REMINDER),
        assistant(call("r", "Read", file_path="cli/sync.py")),
        result("r", "Read", "     1→import click\n" + REMINDER),
        assistant(text("Added the flag.")),
    ]
    out = summarize(msgs)
    assert "mention this" not in out and "emojis" not in out
    assert section(out, "## Goal") == "Add a --dry-run flag to the sync command in cli/sync.py"
    assert section(out, "## Constraints & Preferences") == "(none)"


def test_slash_commands_interruptions_and_shell_input_are_read_as_what_they_are() -> None:
    assert read_user("<command-name>/clear</command-name>\n<command-message>clear</command-message>\n"
                     "<command-args></command-args>").text == ""
    review = read_user("<command-name>/review</command-name>\n<command-args>only the parser</command-args>")
    assert (review.command, review.text) == ("/review", "only the parser")
    stopped = read_user("[Request interrupted by user for tool use]")
    assert stopped.interrupted and stopped.text == ""
    shell = read_user("<bash-input>git status</bash-input>\n<bash-stdout>nothing to commit</bash-stdout><bash-stderr></bash-stderr>")
    assert shell.shell == ("git status", "nothing to commit")
    msgs = [
        user("Port the importer in etl/load.py to the new client"),
        assistant(call("b", "bash", command="make import")),
        user("[Request interrupted by user for tool use]"),
        user("<command-name>/cost</command-name>\n<command-message>cost</command-message>"),
        user("<local-command-stdout>Total cost: $0.12</local-command-stdout>"),
    ]
    out = summarize(msgs)
    assert section(out, "## Goal") == "Port the importer in etl/load.py to the new client"
    assert "cost" not in out.lower()


def test_a_call_declined_at_the_prompt_is_a_rejection_with_the_users_words_not_an_error() -> None:
    said = declined("The user doesn't want to proceed with this tool use. The tool use was rejected "
                    "(eg. if it was a file edit, the new_string was NOT written to the file). "
                    "To tell you how to proceed, the user said:\nno, keep the old column name, the exports depend on it")
    assert said == "no, keep the old column name, the exports depend on it"
    assert declined("3 passed in 0.2s") is None
    msgs = [
        user("Rename the `cust_id` column to `customer_id` in db/schema.sql"),
        assistant(text("I'll rename it."), call("e", "Edit", file_path="db/schema.sql",
                                                 old_string="cust_id INT", new_string="customer_id INT")),
        result("e", "edit", "The user doesn't want to proceed with this tool use. The tool use was rejected. "
                            "To tell you how to proceed, the user said:\nno, keep the old column name, "
                            "the exports depend on it", is_error=True),
    ]
    out = summarize(msgs)
    assert section(out, "### Blocked") == "(none)"
    decisions = section(out, "## Key Decisions")
    assert "**Rejected by the user**: edit db/schema.sql" in decisions
    assert "the exports depend on it" in decisions


def test_the_agents_task_list_gives_done_in_progress_and_next() -> None:
    todos = [{"content": "Write the migration", "status": "completed", "activeForm": "Writing"},
             {"content": "Backfill the audit table", "status": "in_progress", "activeForm": "Backfilling"},
             {"content": "Update the admin docs", "status": "pending", "activeForm": "Updating"}]
    msgs = [
        user("Add an audit table for logins and backfill it from the access logs"),
        assistant(call("t", "TodoWrite", todos=todos)),
        result("t", "TodoWrite", "Todos have been modified successfully."),
        assistant(call("b", "bash", command="python scripts/backfill.py --since 2024-01-01")),
    ]
    out = summarize(msgs)
    assert "- [x] Write the migration" in section(out, "### Done")
    assert "Working on: Backfill the audit table" in section(out, "### In Progress")
    assert "Update the admin docs" in section(out, "## Next Steps")
    assert "TodoWrite" not in out and "todowrite" not in out


def test_an_approved_plan_is_agreed_and_a_sub_agents_findings_are_kept() -> None:
    plan = "# Cache the price lookups\n\n1. Add an LRU cache around `fetch_price`\n2. Invalidate it on the price webhook\n"
    msgs = [
        user("The checkout page is slow, find out why and fix it"),
        assistant(call("a", "Task", description="Profile checkout", prompt="Find the slow part of checkout")),
        result("a", "Task", "The slow part is `fetch_price`: it calls the pricing API once per cart line, "
                            "about 40 calls per page. Nothing caches the answers."),
        assistant(call("p", "ExitPlanMode", plan=plan)),
        result("p", "ExitPlanMode", "User has approved your plan. You can now start coding."),
    ]
    out = summarize(msgs)
    assert "**Plan agreed with the user**: Add an LRU cache around `fetch_price`; Invalidate it on the price webhook" \
        in section(out, "## Key Decisions")
    assert "it calls the pricing API once per cart line" in out


def test_user_messages_are_listed_condensed_in_their_own_words() -> None:
    long = ("Next, the export job. It runs nightly and writes one CSV per tenant into the bucket. "
            "The finance team opens those files in Excel, and the column order is what their macros expect. "
            "Keep the column order exactly as it is, because the macros break otherwise. "
            "The timestamps are currently local time. Switch them to UTC. "
            "There is a lot of history in that module and some of it looks odd but it works. "
            "Also the file names look like export-3-2024.csv today which sorts badly in listings.")
    msgs = [
        user("Make the export job idempotent"),
        assistant(text("Done: it now skips tenants whose file exists.")),
        user("ok"),
        user(long + "\n```\nTraceback (most recent call last):\n  File \"x.py\"\nKeyError: 'tz'\n```"),
    ]
    out = summarize(msgs)
    said = section(out, "## User Messages").splitlines()
    # the first message is quoted whole under Goal, the rule under Constraints: neither is repeated here
    assert "- Make the export job idempotent" in section(out, "## Goal")
    rule = "Keep the column order exactly as it is, because the macros break otherwise."
    assert rule in section(out, "## Constraints & Preferences")
    assert len(said) == 1  # the acknowledgement is not a message worth keeping
    assert said[0].startswith("- Next, the export job.") and rule not in said[0]
    assert "Traceback" not in said[0] and len(said[0]) <= 330
    assert condense("Use UTC.") == "Use UTC."


def test_the_users_answers_to_the_agents_questions_are_decisions_with_the_options_left_out() -> None:
    questions = [{"question": "Which storage should the cache use?", "header": "Storage",
                  "options": [{"label": "Redis", "description": "shared between workers"},
                              {"label": "In-process LRU", "description": "per worker, no new service"}]}]
    msgs = [
        user("Add caching to the search endpoint"),
        assistant(call("q", "AskUserQuestion", questions=questions)),
        result("q", "AskUserQuestion", 'User has answered your questions: "Which storage should the cache use?"='
                                       '"In-process LRU". You can now continue with the user\'s answers in mind.'),
    ]
    out = summarize(msgs)
    decisions = section(out, "## Key Decisions")
    assert "**User chose** “In-process LRU” for: Which storage should the cache use?" in decisions
    assert "options not chosen: Redis (shared between workers)" in decisions
    assert "askuserquestion" not in section(out, "### Done").lower()


def test_a_list_the_assistant_introduces_as_findings_is_kept_mid_turn() -> None:
    msgs = [
        user("Why does the nightly backup job take four hours?"),
        assistant(text("Key findings:\n- The dump runs without compression, so 300 GB go over the network\n"
                       "- Every table is locked one after another instead of using a snapshot\n\nLet me check the cron file."),
                  call("r", "read", path="ops/backup.cron")),
        result("r", "read", "0 2 * * * /opt/backup.sh\n"),
    ]
    out = summarize(msgs)
    assert "The dump runs without compression, so 300 GB go over the network" in out
    assert "Every table is locked one after another instead of using a snapshot" in out


def test_what_a_file_that_was_read_is_goes_into_critical_context() -> None:
    msgs = [
        user("Explore how the billing module is organised"),
        assistant(call("r", "read", path="lib/billing/invoice.ex")),
        result("r", "read", '     1→defmodule Billing.Invoice do\n     2→  @moduledoc """\n'
                            '     3→  Builds invoices from metered usage records.\n     4→  """\n'
                            '     5→  def build(usage), do: usage\nend\n'),
    ]
    critical = section(summarize(msgs), "## Critical Context")
    assert "Read lib/billing/invoice.ex: “Builds invoices from metered usage records.”; " \
           "defines Billing.Invoice, build()" in critical


def test_a_tight_budget_trims_every_content_section_rather_than_emptying_one() -> None:
    msgs = [user("Migrate the settings loader to TOML and keep the old JSON files readable")]
    for i in range(30):
        msgs += [assistant(call(f"e{i}", "edit", path=f"src/settings/part{i}.py", oldText="x = 1\n",
                                newText=f"def load_part_{i}():\n    # reads part {i} of the settings from TOML\n    ...\n")),
                 result(f"e{i}", "edit", "ok")]
        msgs += [user(f"Also make sure part {i} never drops unknown keys, because plugin authors rely on them")]
    out = extract_summary(make_request(messages=msgs, max_tokens=1200))
    assert section(out, "### Done") != "(none)"
    # the first message stays (under Goal, which User Messages does not repeat)
    assert "Migrate the settings loader to TOML and keep the old JSON files readable" in section(out, "## Goal")
    assert section(out, "## User Messages").startswith("- ")
    assert section(out, "## Constraints & Preferences") != "(none)"


def test_a_project_checked_out_under_tmp_is_the_work_not_scratch() -> None:
    msgs = [
        user("Port the helpers in /tmp/proj to Rust and delete the Python files"),
        assistant(call("w", "write", path="/tmp/proj/src/lib.rs", content="//! Helpers ported from Python.\npub fn add() {}\n")),
        result("w", "write", "ok"),
        assistant(call("b", "bash", command="rm /tmp/proj/src/helpers.py && rm -rf /tmp/scratch-build")),
        result("b", "bash", ""),
    ]
    done = section(summarize(msgs), "### Done")
    assert "Wrote /tmp/proj/src/lib.rs: “Helpers ported from Python.”" in done  # `//!` is a doc comment
    assert "Deleted /tmp/proj/src/helpers.py" in done
    assert "scratch-build" not in done  # a /tmp directory the work never touched stays scratch


def test_a_check_that_passed_before_later_edits_keeps_its_counts() -> None:
    msgs = [
        user("Make the parser accept empty input"),
        assistant(call("t", "bash", command="cargo test")),
        result("t", "bash", "test result: ok. 29 passed; 0 failed; 0 ignored"),
        assistant(call("e", "edit", path="src/parse.rs", oldText="fn a() {}\n", newText="fn a() {}\nfn b() {}\n")),
        result("e", "edit", "ok"),
    ]
    assert "`cargo test` passes (29 passed, 0 failed) (before the last edits)" in section(summarize(msgs), "### Done")


def test_greetings_and_thanks_are_not_the_goal() -> None:
    msgs = [user("Good afternoon! Thanks so much for the help yesterday. Could you add retries to the uploader?")]
    out = summarize(msgs)
    assert section(out, "## Goal") == "Could you add retries to the uploader?"
    assert section(out, "## User Messages") == "- (all quoted above, under Goal and Constraints)"  # greeting dropped


def test_the_assistants_causal_explanations_are_findings() -> None:
    msgs = [
        user("Why is one region of math.rs uncovered?"),
        assistant(text("The uncovered region is the error arm of `?`, which means it can only run on overflow."),
                  call("r", "read", path="src/math.rs")),
        result("r", "read", "fn f() {}"),
    ]
    assert "Finding: The uncovered region is the error arm of `?`, which means it can only run on overflow." \
        in section(summarize(msgs), "## Critical Context")


def test_a_missing_program_is_a_fact_with_its_workaround_and_short_listings_are_kept() -> None:
    msgs = [
        user("Explore the layout of the repository at /srv/apps/shop"),
        assistant(call("t", "bash", command="tree /srv/apps/shop/lib -L 2")),
        result("t", "bash", "(eval):1: command not found: tree", is_error=True),
        assistant(text("Let me use find instead."), call("f", "bash", command="find /srv/apps/shop/lib -type d | sort")),
        result("f", "bash", "/srv/apps/shop/lib\n/srv/apps/shop/lib/web\n/srv/apps/shop/lib/jobs\n"),
        assistant(call("l", "bash", command="ls -la /srv/apps/shop/config")),
        result("l", "bash", "total 8\n-rw-r--r-- 1 ana ana 120 Feb 10 23:12 dev.exs\n-rw-r--r-- 1 ana ana 80 Feb 10 23:12 prod.exs\n"),
        assistant(call("r", "read", path="/srv/apps/shop/lib/web/router.ex")),
        result("r", "read", "defmodule Web.Router do\nend\n"),
        assistant(call("r2", "read", path="/srv/apps/shop/config/dev.exs")),
        result("r2", "read", "import Config\n"),
    ]
    out = summarize(msgs)
    critical = section(out, "## Critical Context")
    # a program the machine lacks is a fact about it, not an error of the work
    assert "Not installed here: `tree` ((eval):1: command not found: tree) — Let me use find instead." in critical
    assert section(out, "### Blocked") == "(none)" and section(out, "## Next Steps").count("tree") == 0
    assert "Looked: `find lib -type d | sort` → lib, lib/web, lib/jobs" in critical  # relative to the root
    assert "Looked: `ls -la config` → dev.exs, prod.exs" in critical


def test_questions_the_assistant_asks_are_not_decisions() -> None:
    msgs = [
        user("Tidy up the report wording"),
        assistant(text("Should I rewrite the summary rather than trim it?")),
    ]
    assert section(summarize(msgs), "## Key Decisions") == "(none)"


def test_hard_wrapped_messages_are_read_as_paragraphs_and_rules_outrank_chatter() -> None:
    wrapped = ("I have been meaning to look at the importer for a while now and today seems like a good day to\n"
               "start, since the nightly job keeps timing out. The logs are in the usual place and the\n"
               "dashboards are up. It must stay compatible with the v1 file format, because partners still\n"
               "send it. Tell me what you find.")
    out = extract_summary(make_request(messages=[user(wrapped)]))
    said = section(out, "## User Messages")
    assert "Tell me what you find." in said  # the rule is not repeated here: Constraints quotes it
    constraints = section(out, "## Constraints & Preferences")
    assert constraints == "- It must stay compatible with the v1 file format, because partners still send it."
    long = ("Some background first, the service was written years ago by a team that has since moved on. "
            "Nobody has touched the retry code since and the tests are thin. The code is in svc/retry.go. "
            "There are a couple of odd helpers in there. Do not change the public API of the package. "
            "Make the backoff exponential.")
    condensed = condense(long, 160)
    assert "Do not change the public API of the package." in condensed  # a rule before plain statements
    assert condensed.startswith("Some background first")


def test_what_the_user_does_not_see_or_recall_is_not_a_rule() -> None:
    out = summarize([user("Write the migration guide. I don't recall the old flag names, and I don't see the "
                          "changelog either. Never mention the internal tracker in public docs.")])
    assert section(out, "## Constraints & Preferences") == "- Never mention the internal tracker in public docs."


def test_a_tight_budget_keeps_the_users_corrections_longest() -> None:
    msgs = [user("Clean up the logging in the worker package"),
            assistant(text("I removed the debug logs everywhere, including the audit trail.")),
            user("no, the audit trail logs must stay, compliance reads them")]
    for i in range(20):
        msgs += [assistant(text(f"Step {i} checked.")), user(f"which file holds helper number {i} of the worker?")]
    out = extract_summary(make_request(messages=msgs, max_tokens=300))
    assert "no, the audit trail logs must stay, compliance reads them" in section(out, "## User Messages")


def test_in_progress_says_what_the_agent_was_doing_for_the_latest_request() -> None:
    msgs = [
        user("Add rate limiting to the public API"),
        assistant(text("Done, limits are in place.")),
        user("what about the admin endpoints, are they limited too?"),
        assistant(text("They are not. Let me check the router first."), call("r", "read", path="api/router.py")),
        result("r", "read", "routes = []"),
        assistant(text("Now let me add the limiter to the admin routes."),
                  call("e", "edit", path="api/admin.py", oldText="a = 1\n", newText="a = 2\n")),
    ]
    progress = section(summarize(msgs), "### In Progress")
    assert "Latest request: what about the admin endpoints, are they limited too?" in progress
    assert "Doing: Let me check the router first; Now let me add the limiter to the admin routes — edit api/admin.py" \
        in progress


def test_a_push_that_failed_then_went_through_is_not_a_fix_of_the_work() -> None:
    msgs = [
        user("Commit and push the fix"),
        assistant(call("p", "bash", command="git push origin main")),
        result("p", "bash", "error: failed to push some refs to 'origin'\nCommand exited with code 1", is_error=True),
        assistant(call("p2", "bash", command="git pull --rebase origin main && git push origin main")),
        result("p2", "bash", "Successfully rebased and updated refs/heads/main."),
    ]
    out = summarize(msgs)
    assert "failed to push" not in section(out, "### Done") and section(out, "### Blocked") == "(none)"


def test_a_short_reply_that_picks_an_offered_option_is_the_users_decision() -> None:
    msgs = [
        user("The export is too slow, how should we speed it up?"),
        assistant(text("Two ways:\n1. Stream rows straight to the file instead of building a list\n"
                       "2. Parallelise per tenant with a process pool\n\nWhich do you prefer?")),
        user("let's go with the first one"),
    ]
    out = summarize(msgs)
    assert "**User chose**: Stream rows straight to the file instead of building a list" in section(out, "## Key Decisions")
    from compactd.summarize.embedded.dialog import picked_option
    offer = "Options:\n- **A)** keep the cache\n- **B)** drop it"
    assert picked_option("b", offer) == "drop it"
    assert picked_option("option A please", offer) == "keep the cache"
    assert picked_option("why is the cache needed at all? explain the trade-offs in detail please", offer) is None
    assert picked_option("do a full rewrite", offer) is None  # a word, not a pick


def test_steps_the_agent_set_out_mid_turn_are_in_progress_when_the_work_is_cut() -> None:
    msgs = [
        user("Move the settings page to the new form library"),
        assistant(text("I'll do this in order:\n1. Port the profile form\n2. Port the billing form\n3. Delete the old helpers"),
                  call("e", "edit", path="web/profile.tsx", oldText="a\n", newText="b\n")),
        result("e", "edit", "ok"),
        assistant(call("e2", "edit", path="web/billing.tsx", oldText="a\n", newText="b\n")),
    ]
    progress = section(summarize(msgs), "### In Progress")
    assert "Steps set out for it: Port the profile form; Port the billing form; Delete the old helpers" in progress


def test_a_choice_stated_as_a_preference_or_trade_off_is_a_decision() -> None:
    msgs = [
        user("Store the session tokens somewhere"),
        assistant(text("I prefer Redis over the database here, since tokens expire and Redis drops them for us."),
                  call("r", "read", path="cfg/app.toml")),
        result("r", "read", "x = 1"),
    ]
    assert "I prefer Redis over the database here" in section(summarize(msgs), "## Key Decisions")


def test_a_short_imperative_is_a_task_not_an_acknowledgement() -> None:
    from compactd.summarize.embedded.dialog import classify_user
    assert classify_user("create the beads") == "task"
    assert classify_user("run the tests") == "task"
    assert classify_user("ok thanks") == "ack" and classify_user("go ahead") == "ack"
    msgs = [user("Draft the release notes for 2.4"), assistant(text("Here is a draft.")), user("commit them"),
            assistant(call("c", "bash", command="git add notes.md"))]
    assert "Working on: commit them" in section(summarize(msgs), "### In Progress")
