"""Where the work stands and what comes next (issue 25), on small synthetic sessions: the order of
Next Steps, the steps of a plan, the user's requests and conditions."""

from __future__ import annotations

from compactd.summarize.extractive import extract_summary
from tests.support.summarizers import make_request

from .test_extractive import assistant, call, result, section, text, user


def summarize(msgs: list) -> str:
    return extract_summary(make_request(messages=msgs))


def final(t: str) -> dict:
    return {"role": "assistant", "content": [text(t)], "stopReason": "stop", "timestamp": 2}


def test_a_long_approved_plan_does_not_push_the_open_request_out_of_next_steps() -> None:
    plan = "# Clean up the exports\n\n" + "\n".join(f"- tidy export module number {i} of the reporting app"
                                                  for i in range(1, 10))
    msgs = [
        user("Plan a cleanup of the reporting exports"),
        assistant(call("p", "ExitPlanMode", plan=plan)),
        result("p", "ExitPlanMode", "User has approved your plan."),
        user("start with the csv writer and keep its public signature"),
        assistant(text("Starting with the csv writer."), call("r", "read", path="reports/csv_writer.py")),
    ]
    nxt = section(summarize(msgs), "## Next Steps")
    assert nxt.startswith("1. Finish: start with the csv writer")
    assert "tidy export module number 1 of" in nxt  # the plan's first steps stay, its tail goes


_PLAN = """# Plan: search for the docs site

## Context
- the site has 300 pages
- builds run on every push

### Step 1: Build an index at deploy time
- walk the rendered pages
- write `search.json`

### Step 2: Add the search box
- a small script that loads `search.json`

## Out of scope
- No server-side search in this change
- Keep the current page layout as it is
"""


def test_numbered_headings_are_the_steps_of_an_approved_plan_and_its_bounds_are_kept_as_rules() -> None:
    msgs = [
        user("Plan search for the docs site"),
        assistant(call("p", "ExitPlanMode", plan=_PLAN)),
        result("p", "ExitPlanMode", "User has approved your plan."),
    ]
    out = summarize(msgs)
    nxt = section(out, "## Next Steps")
    assert "Step 1: Build an index at deploy time — walk the rendered pages" in nxt  # with its first detail
    assert "Step 2: Add the search box" in nxt
    assert "300 pages" not in nxt and "write `search.json`" not in nxt  # the context, and the rest of the details
    rules = section(out, "## Constraints & Preferences")
    assert "Agreed with the plan: No server-side search in this change; Keep the current page layout as it is" in rules


def test_numbered_items_are_the_steps_when_bullets_list_files_beside_them() -> None:
    plan = ("# Retry uploads\n\nFiles:\n- `up/client.py` holds the upload client\n- `tests/test_client.py` gets the new test\n\n"
            "1. Wrap the request in a bounded retry loop\n2. Add a test that fails twice then succeeds")
    msgs = [
        user("Plan retries for the upload client"),
        assistant(call("p", "ExitPlanMode", plan=plan)),
        result("p", "ExitPlanMode", "User has approved your plan."),
    ]
    nxt = section(summarize(msgs), "## Next Steps")
    assert "Wrap the request in a bounded retry loop" in nxt and "holds the upload client" not in nxt


# -- constraints -------------------------------------------------------------------------------
def rules_of(*messages: str) -> str:
    msgs: list = []
    for i, m in enumerate(messages):
        msgs += [user(m), final(f"Step {i} is done: the change is in place and its tests pass.")]
    return section(summarize(msgs), "## Constraints & Preferences")


def test_the_instructions_after_the_opening_ask_of_a_task_are_rules_with_the_fragments_that_continue_them() -> None:
    rules = rules_of("Write up the incident from last night as docs/incident.md. Include a timeline of the outage. "
                     "The alerts that fired. And the follow-up actions with owners. Use UTC for every timestamp. "
                     "Then commit it.")
    assert ("Include a timeline of the outage. The alerts that fired. And the follow-up actions with owners."
            in rules)
    assert "Use UTC for every timestamp." in rules
    assert "Write up the incident" not in rules  # the ask itself is the goal
    assert "Then commit it" not in rules  # a step in sequence, not a rule


def test_an_instruction_after_an_opening_phrase_and_a_preference_by_contrast_are_rules() -> None:
    rules = rules_of("Review the billing module for dead code. In addition to the review, list the three riskiest "
                     "functions. We test the pricing rules with table-driven cases, not with one test per price. "
                     "It is a legacy module, not a new one.")
    assert "In addition to the review, list the three riskiest functions." in rules
    assert "We test the pricing rules with table-driven cases, not with one test per price." in rules
    assert "legacy module" not in rules  # a contrast that describes, said by no one about what they do


def test_a_rule_that_introduces_an_example_block_keeps_the_blocks_first_lines() -> None:
    rules = rules_of("Summarize each failing test in the nightly run.\n\nWrite every entry in this format:\n\n"
                     "```\ntest_name: one-line cause\n  owner: who fixes it\n```\n")
    assert "Write every entry in this format: “test_name: one-line cause / owner: who fixes it”" in rules


def test_a_go_ahead_that_comes_with_a_request_keeps_the_request_as_a_rule() -> None:
    msgs = [
        user("Plan the move of the cron jobs to the scheduler service"),
        final("Plan:\n1. List every cron job\n2. Port them one by one\n\nShould I start with the plan?"),
        user("go ahead. Could you ask me for all the credentials you need up front? I will be away later."),
        final("Started: listed the nine cron jobs; I need the scheduler token and the database password."),
    ]
    rules = section(summarize(msgs), "## Constraints & Preferences")
    assert "Could you ask me for all the credentials you need up front?" in rules
    assert "away later" not in rules


# -- decisions ---------------------------------------------------------------------------------
def test_an_intention_that_says_what_it_leaves_out_is_a_decision() -> None:
    msgs = [
        user("Remove the old Python sources now that the Go port is done"),
        assistant(text("I need to delete the sources under `py/` (not the deploy scripts, the CI still runs them)."),
                  call("d", "bash", command="rm -r py/")),
        result("d", "bash", "(no output)"),
        final("Removed `py/`; the deploy scripts stay."),
    ]
    decisions = section(summarize(msgs), "## Key Decisions")
    assert "not the deploy scripts, the CI still runs them" in decisions


def test_a_rejected_short_offer_is_named_by_the_sentence_before_it_and_is_not_done_work() -> None:
    msgs = [
        user("Propose where the shared helpers should live"),
        final("Here is the layout I have in mind, after reading every module.\n\n"
              "Both the web app and the worker would import the helpers from a new `common/` package.\n\n"
              "Want me to proceed with this layout?"),
        user("no, keep them next to the code that uses them, a shared package couples the two deploys"),
        final("Understood: the helpers stay where they are used."),
    ]
    out = summarize(msgs)
    decisions = section(out, "## Key Decisions")
    assert ("**Rejected by the user**: Both the web app and the worker would import the helpers from a new "
            "`common/` package. Want me to proceed with this layout?") in decisions
    assert "`common/` package" not in section(out, "### Done")  # put forward and refused: not done


def test_a_task_list_the_todo_tool_shows_as_checkboxes_gives_the_open_items() -> None:
    shown = ("☒ Read the three importers\n☒ Move the shared parsing into one module\n"
             "☐ Switch the CLI to the new module\n☐ Delete the old parsers")
    msgs = [
        user("Unify the three CSV importers"),
        assistant(text("Updating the task list."), call("t", "todo")),
        result("t", "todo", shown),
        assistant(text("Now the CLI."), call("r", "read", path="cli/main.py")),
    ]
    out = summarize(msgs)
    nxt = section(out, "## Next Steps")
    assert "Switch the CLI to the new module" in nxt and "Delete the old parsers" in nxt
    assert "Move the shared parsing into one module" in section(out, "### Done")


def test_a_final_reply_that_says_what_is_still_to_do_gives_it_as_a_next_step() -> None:
    msgs = [
        user("Add rate limiting to the public API"),
        final("Added a token bucket per API key in `middleware/limit.py`; the unit tests pass. "
              "The admin routes still need an exemption, since the dashboard polls them every second."),
    ]
    nxt = section(summarize(msgs), "## Next Steps")
    assert "The admin routes still need an exemption, since the dashboard polls them every second." in nxt


def test_work_the_user_puts_off_until_later_is_a_later_step_and_a_sequence_step_is_not() -> None:
    msgs = [
        user("Fix the flaky upload test. Once the release branch is cut, we need to drop the old retry flag. "
             "After that, you can look at the logs."),
        final("The upload test was flaky because of a shared temp dir; each test gets its own now."),
    ]
    nxt = section(summarize(msgs), "## Next Steps")
    assert "Later, as the user said: “Once the release branch is cut, we need to drop the old retry flag.”" in nxt
    assert "look at the logs" not in nxt


def test_a_reply_the_user_dictates_in_quotes_is_not_taken_for_their_thanks() -> None:
    msgs = [
        user("made a few more tweaks. commit and push, then answer the issue with \"Thanks for the report, this is "
             "fixed in the next release\""),
        final("Committed and pushed; commented on the issue."),
    ]
    goal = section(summarize(msgs), "## Goal")
    assert "answer the issue with \"Thanks for the report, this is fixed in the next release\"" in goal


def test_under_a_tight_budget_in_progress_keeps_what_the_agent_was_doing_before_the_file_lists() -> None:
    msgs = [user("Split the reporting module into one file per report")]
    for i in range(12):
        msgs += [assistant(call(f"e{i}", "edit", path=f"reports/report_number_{i}_with_a_long_name.py", oldText="x = 1\n",
                                newText=f"def build_report_{i}():\n    # builds report {i} from the warehouse rows\n    ...\n")),
                 result(f"e{i}", "edit", "ok")]
    msgs.append(assistant(text("Now let me wire the new report modules into the scheduler registry."),
                          call("r", "read", path="scheduler/registry.py")))
    out = extract_summary(make_request(messages=msgs, max_tokens=400))
    progress = section(out, "### In Progress")
    assert "Doing: Now let me wire the new report modules into the scheduler registry" in progress
    assert "Changed since the latest request" not in progress  # the file list goes first


def test_a_correction_that_is_the_latest_request_is_quoted_once_in_progress() -> None:
    msgs = [
        user("Cache the exchange rates for an hour"),
        assistant(text("Caching them in a module-level dict."),
                  call("e", "edit", path="fx/rates.py", oldText="def rate(c):\n", newText="_CACHE = {}\ndef rate(c):\n")),
        result("e", "edit", "ok"),
        user("no, use the shared redis cache, the workers are separate processes"),
        assistant(text("Switching to the redis cache."), call("r", "read", path="fx/cache.py")),
    ]
    progress = section(summarize(msgs), "### In Progress")
    assert progress.count("use the shared redis cache") == 1
    assert "Reworking it after the user's correction" in progress


def test_under_a_tight_budget_the_users_refusal_outlasts_the_agents_own_choices() -> None:
    msgs = [
        user("Speed up the nightly export"),
        final("I could stream the rows instead of loading them all. Want me to do that?"),
        user("no, the export has to stay one transaction, the auditors read it as a snapshot"),
    ]
    for i in range(10):
        msgs += [assistant(text(f"I'll use batch size {i * 100 + 500} for table number {i} rather than the default, "
                                f"because table {i} has wide rows."),
                           call(f"e{i}", "edit", path=f"export/table_{i}.py", oldText="n = 1\n", newText=f"n = {i}\n")),
                 result(f"e{i}", "edit", "ok")]
    out = extract_summary(make_request(messages=msgs, max_tokens=450))
    decisions = section(out, "## Key Decisions")
    assert "**Rejected by the user**" in decisions and "auditors read it as a snapshot" in decisions


def test_as_inside_a_clause_is_not_where_the_users_reason_starts() -> None:
    msgs = [
        user("Speed up the nightly export"),
        final("I could stream the rows instead of loading them all. Want me to do that?"),
        user("no, the export has to stay one transaction, the auditors read it as a snapshot"),
        final("Understood, it stays one transaction."),
    ]
    decisions = section(summarize(msgs), "## Key Decisions")
    assert "— the export has to stay one transaction, the auditors read it as a snapshot" in decisions


def test_a_question_without_its_question_mark_is_not_a_task_to_finish() -> None:
    msgs = [
        user("Migrate the settings page to the new form library"),
        assistant(text("Reading the page first."), call("r", "read", path="web/settings.tsx")),
        result("r", "read", "export function Settings() { return null }"),
        user("why does it read the whole page one screen at a time"),
        assistant(text("Reading it whole now."), call("r2", "read", path="web/settings.tsx")),
    ]
    out = summarize(msgs)
    assert "why does it read" not in section(out, "## Goal")
    assert section(out, "## Next Steps").startswith("1. Finish: Migrate the settings page to the new form library")


def test_lines_that_map_one_thing_to_another_are_kept_as_the_users_words() -> None:
    msgs = [
        user("Propose a layout for the helpers that are now shared by the web app and the worker"),
        final("I'd put every helper into a new `shared/` package at the top. Want me to move them there?"),
        user("no, that's too flat.\n\nmail helpers -> web/mail\nqueue helpers -> worker/queue\n"
             "date and money formatting -> common/format\nretry and backoff helpers -> common/retry\n"
             "feature flag lookups and the settings cache -> common/config\n\n"
             "the worker image is built separately from the web image and it should stay small, so keep that in mind "
             "when you sort out the rest of the helpers that I did not list here"),
    ]
    said = section(summarize(msgs), "## User Messages")
    assert "mail helpers -> web/mail" in said  # a mapping line is kept whole, not lost in a joined paragraph


def test_an_offer_made_as_a_statement_is_an_offered_next_step() -> None:
    msgs = [
        user("Find out why the signup emails go to spam"),
        final("The sending domain has no DKIM record, so most providers mark the mails as spam. "
              "Let me know if you'd like me to draft the DNS records for it."),
    ]
    nxt = section(summarize(msgs), "## Next Steps")
    assert "Offered: Let me know if you'd like me to draft the DNS records for it." in nxt


def test_a_rule_said_along_with_a_question_is_kept() -> None:
    rules = rules_of("Add an export button to the invoices page",
                     "What does the audit job read from the invoices table? Don't change the audit job itself.")
    assert "Don't change the audit job itself." in rules


def test_a_choice_the_user_settles_inside_a_task_message_is_a_decision() -> None:
    msgs = [
        user("Add full-text search to the notes app. Let's go with SQLite FTS5 rather than a separate search "
             "server, the app ships as one binary."),
        final("Added an FTS5 table and a `search` command."),
    ]
    decisions = section(summarize(msgs), "## Key Decisions")
    assert ("**User**: \"Let's go with SQLite FTS5 rather than a separate search server, the app ships as one binary.\""
            in decisions)


def test_a_choice_announced_as_what_comes_next_is_a_decision() -> None:
    msgs = [
        user("Make the image resizer faster"),
        final("Two options: resize on upload, or resize lazily on first request. "
              "Let's go with resizing on upload, since every image is shown at least once."),
    ]
    decisions = section(summarize(msgs), "## Key Decisions")
    assert "Let's go with resizing on upload" in decisions and "every image is shown at least once" in decisions


def test_a_short_yes_to_an_offer_made_as_a_statement_is_the_next_step_not_an_answered_request() -> None:
    offer = ("If you want, I can add a streaming reader so the export never holds more than one page of "
             "invoices.")
    for reply in ("pls add", "yes", "sure, add it"):
        msgs = [
            user("Why does the nightly export job stop halfway on large accounts?"),
            final("The job reads every invoice into memory, and the worker is killed when it passes 2 GB. "
                  f"Nothing retries it, so the export stays half written.\n\n{offer}\n\n---"),
            user(reply),
        ]
        out = summarize(msgs)
        nxt = section(out, "## Next Steps")
        assert nxt.startswith(f"1. Do what the user just agreed to (“{reply}”): {offer}"), reply
        assert "was answered" not in nxt and "Offered:" not in nxt
        assert "User agreed" not in section(out, "## Key Decisions")  # said once, where it is what comes next


def test_a_short_reply_that_names_something_else_does_not_accept_the_offer() -> None:
    msgs = [
        user("Why does the nightly export job stop halfway on large accounts?"),
        final("The job reads every invoice into memory. If you want, I can add a streaming reader for it."),
        user("what about retries?"),
    ]
    assert "agreed" not in section(summarize(msgs), "## Next Steps")


def test_work_the_user_takes_on_themselves_is_a_step_that_is_not_the_agents() -> None:
    msgs = [
        user("Add a retry with backoff to the webhook sender"),
        final("Added exponential backoff with jitter in `sender/retry.py`, capped at five attempts."),
        user("drop the jitter again, I'll tune the delays on my own"),
        final("Removed the jitter; the backoff is plain exponential now."),
    ]
    nxt = section(summarize(msgs), "## Next Steps")
    assert "Not the agent's: the user will tune the delays themselves" in nxt


def test_a_recap_item_that_opens_in_bold_keeps_no_stray_stars() -> None:
    msgs = [
        user("Add the export endpoints"),
        final("All three endpoints are in place.\n\n"
              "1. **`export_csv()`** - streams the invoices as CSV rows\n"
              "2. **Rate limit** (per key): ten exports a minute\n"),
    ]
    done = section(summarize(msgs), "### Done")
    assert "`export_csv()` - streams the invoices as CSV rows" in done
    assert "Rate limit (per key): ten exports a minute" in done and "**" not in done
