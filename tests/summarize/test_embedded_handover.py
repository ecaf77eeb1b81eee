"""What a handover must say to be continued from (issue 25), on small synthetic sessions: where the
user's last request stands, the commit git reported, choices with the options not taken, and rules
in the user's words."""

from __future__ import annotations

from compactd.summarize.extractive import extract_summary
from tests.support.summarizers import make_request

from .test_extractive import assistant, call, result, section, text, user


def summarize(msgs: list) -> str:
    return extract_summary(make_request(messages=msgs))


def final(t: str) -> dict:
    return {"role": "assistant", "content": [text(t)], "stopReason": "stop", "timestamp": 2}


# -- continuation ------------------------------------------------------------------------------
def test_an_answered_last_request_is_quoted_with_the_reply_headline() -> None:
    msgs = [
        user("Rename the config loader to settings.py and update its imports"),
        final("Renamed config.py to settings.py and updated the four modules that import it."),
        user("Now count how many modules still read environment variables directly"),
        final("Three modules still read environment variables directly: cli.py, worker.py and db.py."),
    ]
    nxt = section(summarize(msgs), "## Next Steps")
    assert "the user's last request (“Now count how many modules still read environment variables directly”)" in nxt
    assert "was answered — Three modules still read environment variables directly" in nxt


def test_a_headline_that_ends_a_sentence_is_not_followed_by_a_doubled_stop() -> None:
    msgs = [
        user("The CSV importer crashes on a blank line, fix it"),
        final("Fixed the blank-line crash in `read_rows` (src/importer.py). The loop now skips empty lines."),
    ]
    nxt = section(summarize(msgs), "## Next Steps")
    assert "— Fixed the blank-line crash in `read_rows` (src/importer.py); wait for the user's next one" in nxt
    assert ".;" not in nxt


def test_steps_set_out_mid_turn_are_joined_without_doubled_stops() -> None:
    msgs = [
        user("Add a retry to the upload client and cover it with a test"),
        assistant(text("Plan:\n1. Wrap the request in a retry loop.\n2. Add a test that fails twice then succeeds.\n"
                       "3. Run the suite."), call("r", "read", path="src/upload.py")),
    ]
    progress = section(summarize(msgs), "### In Progress")
    assert "Wrap the request in a retry loop; Add a test that fails twice then succeeds; Run the suite." in progress


def test_a_result_the_cut_came_before_the_agent_reported_is_what_in_progress_shows() -> None:
    status = ("<!-- report -->\nQueue status\n\nPENDING   0 jobs\nFAILED    3 jobs · oldest 2 days\n"
              "WORKERS   2 idle")
    msgs = [
        user("Drain the export queue"),
        final("Drained the export queue: 41 jobs ran."),
        user("And what does the queue look like now?"),
        assistant(text("Checking the queue."), call("s", "bash", command="./jobs status")),
        result("s", "bash", status),
    ]
    progress = section(summarize(msgs), "### In Progress")
    assert ("Last result, not yet reported: `./jobs status` printed: Queue status | PENDING 0 jobs | "
            "FAILED 3 jobs · oldest 2 days | WORKERS 2 idle") in progress
    reported = section(summarize([*msgs, final("Three jobs failed; nothing is pending.")]), "### In Progress")
    assert "Last result" not in reported  # once the agent has said what came back, its reply carries it


def test_a_harness_envelope_before_a_commands_output_is_not_the_result() -> None:
    msgs = [
        user("How many migrations are there?"),
        assistant(call("c", "bash", command="ls migrations | wc -l")),
        result("c", "bash", "Chunk ID: 1a2b\nWall time: 0.01 seconds\nProcess exited with code 0\nOutput:\n17"),
    ]
    progress = section(summarize(msgs), "### In Progress")
    assert "`ls migrations | wc -l` printed: 17" in progress


def test_a_reply_that_ends_by_asking_the_user_waits_for_the_answer() -> None:
    msgs = [
        user("Set up a nightly job that prunes old uploads"),
        final("I can run it from cron on the host or as a scheduled worker in the queue. "
              "Which of the two do you prefer for the pruning job?"),
    ]
    nxt = section(summarize(msgs), "## Next Steps")
    assert nxt.startswith("1. Wait for the user's answer to “Which of the two do you prefer for the pruning job?”")


def test_a_reply_that_ends_by_offering_to_go_on_waits_for_the_users_answer_to_it() -> None:
    msgs = [
        user("Split the settings page into a profile tab and a billing tab"),
        final("The page can be split along its two forms: the profile form and the billing form each become "
              "a tab component. Should I go ahead and split it that way?"),
    ]
    nxt = section(summarize(msgs), "## Next Steps")
    assert nxt.startswith("1. Wait for the user's answer to the offer “Should I go ahead and split it that way?” "
                          "(the last reply, to the user's last request (“Split the settings page")
    assert "Offered:" not in nxt  # the offer is named once, as what is waited on


def test_a_list_of_what_is_left_in_the_last_reply_gives_the_next_steps() -> None:
    for lead in ("Still to do:", "**Remaining:**", "## Follow-ups", "Open questions:"):
        msgs = [
            user("Port the date helpers to the new time library"),
            final(f"Ported `parse_day` and `format_day` to the new library; their tests pass.\n\n{lead}\n"
                  "- port `week_bounds`, which still uses the old library\n- drop the old library from the lockfile"),
        ]
        nxt = section(summarize(msgs), "## Next Steps")
        assert "port `week_bounds`, which still uses the old library" in nxt, lead
        assert "drop the old library from the lockfile" in nxt, lead


def test_an_answered_request_with_steps_left_still_says_it_was_answered() -> None:
    msgs = [
        user("Make the health endpoint report the queue depth"),
        final("Added `queue_depth` to the health payload; the endpoint test passes."),
        user("Also time out the database probe after two seconds"),
        final("The database probe now times out after two seconds.\n\nNext steps:\n- add a test for the timeout"),
    ]
    nxt = section(summarize(msgs), "## Next Steps")
    assert nxt == ("1. add a test for the timeout\n2. The user's last request (“Also time out the database probe "
                   "after two seconds”) was answered — The database probe now times out after two seconds")


def test_a_last_user_message_nothing_replied_to_is_the_first_next_step() -> None:
    msgs = [
        user("Add pagination to the orders list"),
        final("Added `page` and `per_page` to the orders list; its tests pass."),
        user("why does the second page repeat the last order of the first one?"),
    ]
    nxt = section(summarize(msgs), "## Next Steps")
    assert nxt.startswith("1. Reply to the user's latest message, not yet answered: “why does the second page "
                          "repeat the last order of the first one?”")


def test_work_the_agent_called_finished_while_checking_it_is_left_to_report_not_to_finish() -> None:
    base = [
        user("Write docs/ARCHITECTURE.md describing the three services and how they talk"),
        assistant(call("w", "write", path="docs/ARCHITECTURE.md", content="# Architecture\n\nThree services.\n")),
        result("w", "write", "ok"),
    ]
    checking = [*base, assistant(text("I’ve written docs/ARCHITECTURE.md. Let me check its headings."),
                                 call("g", "bash", command="grep -n '^#' docs/ARCHITECTURE.md"))]
    nxt = section(summarize(checking), "## Next Steps")
    assert nxt.startswith("1. Report the finished work to the user once the check under way comes back "
                          "(the agent: “I’ve written docs/ARCHITECTURE.md.”)")
    assert "Finish:" not in nxt
    more = [*base, assistant(text("I've written docs/ARCHITECTURE.md. Now let me add a diagram of the queues."),
                             call("r", "read", path="docs/queues.md"))]
    nxt = section(summarize(more), "## Next Steps")
    assert nxt.startswith("1. Finish: Write docs/ARCHITECTURE.md")  # more work announced: not finished


def test_questions_put_to_the_user_with_no_answer_yet_are_what_next_steps_wait_on() -> None:
    question = {"question": "Which store should the session cache use?",
                "options": [{"label": "Redis", "description": "shared by every worker"},
                            {"label": "In-process LRU", "description": "no new service"}]}
    msgs = [
        user("Cache the session lookups"),
        assistant(text("Two ways to do this."), call("q", "AskUserQuestion", questions=[question])),
    ]
    out = summarize(msgs)
    nxt = section(out, "## Next Steps")
    assert nxt.startswith("1. Wait for the user's answers to the questions put to them: Which store should the "
                          "session cache use? (options: Redis, In-process LRU)")
    assert "no result yet" not in section(out, "### In Progress")  # a question, not a call still running


def test_a_plan_put_up_for_approval_with_no_answer_yet_waits_on_the_user_then_its_steps() -> None:
    plan = ("# Move uploads to object storage\n\n1. Add a storage client behind an interface\n"
            "2. Write new uploads to the bucket\n3. Backfill the old files with a script")
    msgs = [
        user("Plan how to move the uploads off the local disk"),
        assistant(call("p", "ExitPlanMode", plan=plan)),
    ]
    out = summarize(msgs)
    nxt = section(out, "## Next Steps")
    assert nxt.startswith("1. Wait for the user to approve the plan put to them (“Move uploads to object storage”), "
                          "then carry it out")
    assert "2. Add a storage client behind an interface" in nxt and "Backfill the old files with a script" in nxt
    assert "no result yet" not in section(out, "### In Progress")


def test_a_turn_the_user_stopped_waits_for_their_direction() -> None:
    msgs = [
        user("Regenerate the API client from the new schema"),
        assistant(text("Regenerating the client."), call("g", "bash", command="make client")),
        result("g", "bash", "[Request interrupted by user for tool use]"),
        user("[Request interrupted by user for tool use]"),
    ]
    nxt = section(summarize(msgs), "## Next Steps")
    assert nxt.startswith("1. The user stopped the agent mid-turn (during: Regenerating the client. — `make client`)"
                          "; wait for their direction before going on")
    said = [*msgs[:3], user("[Request interrupted by user]\nuse the v2 schema file instead")]
    nxt = section(summarize(said), "## Next Steps")
    assert "stopped the agent" not in nxt  # the user said what to do: that is the next thing, not waiting


def test_a_commit_is_read_from_what_git_printed_when_the_command_hides_the_message() -> None:
    msgs = [
        user("Commit the parser fix"),
        assistant(call("c", "bash", command='git commit -F /tmp/msg.txt')),
        result("c", "bash", "[main 4e5f6a7] parser: accept trailing commas\n 1 file changed, 3 insertions(+)"),
    ]
    done = section(summarize(msgs), "### Done")
    assert 'Committed "parser: accept trailing commas" (4e5f6a7 on `main`)' in done


# -- decisions ---------------------------------------------------------------------------------
def test_a_choice_among_listed_options_keeps_the_option_not_taken_and_why() -> None:
    msgs = [
        user("The export is slow, make it faster"),
        final("Two ways to speed it up:\n"
              "- stream rows with a server-side cursor: constant memory, but the connection stays open for minutes\n"
              "- batch the export in pages of 5000 rows keyed by id: bounded memory and short transactions\n\n"
              "I'm going with the paged batches, since short transactions keep the replica healthy."),
    ]
    decisions = section(summarize(msgs), "## Key Decisions")
    assert "going with the paged batches" in decisions
    assert "not chosen: stream rows with a server-side cursor: constant memory, but the connection stays open" in decisions


def test_a_comparison_that_only_describes_is_not_a_decision() -> None:
    msgs = [
        user("Summarize what the report says"),
        final("The report now reads as a list of observations rather than a ranking of the teams. "
              "I'll use the shorter title instead of the draft one, since the long one wraps in the header."),
    ]
    decisions = section(summarize(msgs), "## Key Decisions")
    assert "observations rather than a ranking" not in decisions
    assert "use the shorter title instead of the draft one" in decisions


# -- constraints -------------------------------------------------------------------------------
def constraints_of(*messages: str) -> str:
    msgs: list = []
    for i, m in enumerate(messages):
        msgs += [user(m), final(f"Done with step {i}: the change is in place and the tests pass.")]
    return section(summarize(msgs), "## Constraints & Preferences")


def test_be_and_only_after_state_rules() -> None:
    rules = constraints_of("Migrate the billing tables to the new schema. Be careful with the invoice history. "
                           "Run the migration only after I have reviewed the plan.")
    assert "Be careful with the invoice history." in rules
    assert "Run the migration only after I have reviewed the plan." in rules


def test_what_the_user_perceives_fears_or_asks_for_is_not_a_rule() -> None:
    rules = constraints_of("Profile the importer and tell me where the time goes. I want you to write the findings "
                           "in a short note. The importer should never load the whole file into memory.",
                           "Maybe I misread the profile, but I don't think the parser is the slow part here.",
                           "I'm worried that the batch size will never fit the small workers.")
    assert "The importer should never load the whole file into memory." in rules
    assert "I want you to write" not in rules
    assert "don't think the parser" not in rules
    assert "worried" not in rules


def test_a_correction_that_says_what_to_do_instead_is_a_rule() -> None:
    msgs = [
        user("Send the welcome emails when a user signs up"),
        assistant(text("I'll send them from a background thread."),
                  call("e", "edit", path="app/signup.py", oldText="def signup(u):\n", newText="def signup(u):\n    Thread(target=send_welcome, args=(u,)).start()\n")),
        result("e", "edit", "ok"),
        user("no, put them on the job queue instead of a thread, the web workers get recycled"),
        final("Moved the welcome emails to the job queue."),
    ]
    rules = section(summarize(msgs), "## Constraints & Preferences")
    assert "no, put them on the job queue instead of a thread" in rules


# -- structured prompts: pasted diffs and status dumps, the task section, instructions as lists -----
_PROMPT = """## Context

- Ticket status: title:\tRetry uploads
state:\tOPEN
- Current diff: diff --git a/up/client.py b/up/client.py
index 1a2b3c4..5d6e7f8 100644
--- a/up/client.py
+++ b/up/client.py
@@ -10,6 +10,9 @@ def upload(blob):
-    # never retry, the server dedupes nothing
+    # always retry twice before giving up
+    for attempt in range(3):

## Your task

Review the change to the upload client and write up what it does.

When you review, pay attention to:

- error handling on the last attempt
- whether the backoff is bounded

Never approve a change without a test.
"""


def test_a_prompt_under_headings_gives_its_task_section_as_goal_and_its_listed_instructions_as_rules() -> None:
    out = summarize([user(_PROMPT), final("The change retries an upload up to three times; the backoff is unbounded.")])
    goal, rules = section(out, "## Goal"), section(out, "## Constraints & Preferences")
    assert goal.startswith("Review the change to the upload client and write up what it does.")
    assert "Context" not in goal and "Ticket" not in goal
    assert ("When you review, pay attention to: error handling on the last attempt; whether the backoff is bounded"
            in rules)
    assert "Never approve a change without a test." in rules
    # the pasted diff's comments and the status dump are not the user's words
    assert "never retry" not in rules and "always retry" not in rules
    assert "state:" not in out.split("## User Messages")[-1]


# -- what a patch did ------------------------------------------------------------------------------
def test_a_patch_that_creates_a_document_is_a_write_with_its_outline_and_opening() -> None:
    patch = ("+# Cache Rollout Plan\n+\n+_Draft, 2026-01-05_\n+\n+## Summary\n+\n"
             "+Put a read-through cache in front of the pricing service with a five minute TTL.\n+\n"
             "+## Risks\n+\n+### Stale prices\n+\n+## Rollout\n+\n+Start with one region.\n")
    msgs = [
        user("Write the rollout plan for the pricing cache in docs/cache-plan.md"),
        assistant(call("p", "edit", path="docs/cache-plan.md", patch=patch)),
        result("p", "edit", "ok"),
    ]
    done = section(summarize(msgs), "### Done")
    assert ("Wrote docs/cache-plan.md: “Cache Rollout Plan”; says “Put a read-through cache in front of the pricing "
            "service with a five minute TTL.”; sections “Summary”, “Risks”, “Rollout”") in done


def test_a_patch_that_changes_code_is_described_by_its_hunks() -> None:
    patch = ("@@ -1,3 +1,6 @@\n import time\n+\n+def backoff(attempt):\n+    # doubles the wait after each failed try\n"
             "+    return 2 ** attempt\n")
    msgs = [
        user("Add exponential backoff to net/retry.py"),
        assistant(call("p", "edit", path="net/retry.py", patch=patch)),
        result("p", "edit", "ok"),
    ]
    done = section(summarize(msgs), "### Done")
    assert "Edited net/retry.py: added backoff(); now says “doubles the wait after each failed try”" in done


# -- slash commands, skills, answers to the agent's questions ------------------------------------
_SKILL_TEXT = ("Base directory for this skill: /home/dev/.claude/skills/tidy\n\n# Tidy\n\n"
               "This skill sorts a repository's stray files into folders. It proposes moves before making them.\n\n"
               "Never move files tracked by git without asking.\n")


def test_a_skill_is_a_task_with_rules_not_the_users_words_and_a_short_command_is_the_latest_request() -> None:
    msgs = [
        user("<command-message>tidy</command-message>\n<command-name>/tidy</command-name>"),
        user(_SKILL_TEXT),
        final("I found 14 stray files; 9 can go under scripts/ and 5 under notes/."),
        user("<command-message>tidy</command-message>\n<command-name>/tidy</command-name>\n<command-args>undo</command-args>"),
        user(_SKILL_TEXT),
        assistant(text("Let me restore the moved files."), call("b", "bash", command="git status --short")),
    ]
    out = summarize(msgs)
    assert section(out, "## Goal") == ("Run the `tidy` skill: This skill sorts a repository's stray files into folders. "
                                       "It proposes moves before making them.")
    assert "Never move files tracked by git without asking." in section(out, "## Constraints & Preferences")
    assert "- [ ] Latest request: `/tidy undo`" in section(out, "### In Progress")
    assert "Base directory" not in out and "stray files into folders" not in section(out, "## User Messages")


def test_an_answer_given_as_plain_text_is_the_users_choice_for_the_questions_asked() -> None:
    msgs = [
        user("Set up the release workflow"),
        assistant(call("q", "AskUserQuestion", input="**Which registry should releases go to?**\n\nOptions:\n"
                                                      "- **npm** - public\n- **GitHub Packages** - private")),
        result("q", "AskUserQuestion", "**Answer:** GitHub Packages"),
    ]
    decisions = section(summarize(msgs), "## Key Decisions")
    assert "**User chose** “GitHub Packages” for: Which registry should releases go to?" in decisions
    assert "(options not chosen: npm (public))" in decisions


# -- size: what one section quotes, another does not repeat ----------------------------------------
def test_user_messages_do_not_repeat_what_goal_and_constraints_quote() -> None:
    msgs = [
        user("Port the invoice exporter from Python 2 to Python 3."),
        final("Ported the exporter; the tests pass on Python 3.12."),
        user("Thanks. The output files must keep their Latin-1 encoding. Also write a short changelog entry."),
        final("Kept Latin-1 for the output files and added a changelog entry."),
        user("Why does the CSV writer in the exporter need newline='' on Python 3?"),
        final("Without it the csv module writes an extra carriage return on Windows."),
    ]
    out = summarize(msgs)
    assert "The output files must keep their Latin-1 encoding." in section(out, "## Constraints & Preferences")
    said = section(out, "## User Messages")
    assert "Why does the CSV writer in the exporter need newline=''" in said
    assert "Latin-1" not in said and "Port the invoice exporter" not in said  # quoted under Constraints, Goal


def test_the_only_task_is_not_repeated_under_in_progress() -> None:
    msgs = [
        user("Add pagination to the audit log endpoint"),
        assistant(text("I'll add limit and cursor parameters."), call("r", "read", path="api/audit.py")),
    ]
    out = summarize(msgs)
    assert "Add pagination to the audit log endpoint" in section(out, "## Next Steps")
    assert "Add pagination" not in section(out, "### In Progress")


def test_work_cut_off_mid_turn_names_the_files_changed_since_the_latest_request() -> None:
    msgs = [
        user("Add a health endpoint"),
        assistant(call("a", "edit", path="srv/routes.py", oldText="routes = []\n", newText="routes = [health]\n")),
        result("a", "edit", "ok"),
        user("Now add logging of every request with its latency"),
        assistant(call("b", "edit", path="srv/middleware.py", oldText="MIDDLEWARE = []\n", newText="MIDDLEWARE = [timing]\n")),
        result("b", "edit", "ok"),
        assistant(call("d", "edit", path="srv/log.py", oldText="", newText="def timing(req):\n    ...\n")),
        result("d", "edit", "ok"),
        assistant(text("Now I'll wire the logger into the app factory."), call("r", "read", path="srv/app.py")),
    ]
    in_progress = section(summarize(msgs), "### In Progress")
    assert "- [ ] Changed since the latest request: srv/middleware.py, srv/log.py" in in_progress


def test_a_yes_or_no_to_the_offer_a_reply_ends_with_is_a_decision() -> None:
    msgs = [
        user("The nightly import is slow"),
        final("Most of the time goes to one INSERT per row. Batching 1000 rows per statement would cut it to a "
              "few seconds. Want me to do this?"),
        user("yes please"),
        final("Batched the inserts; the import takes 4 seconds now. Should I also drop the unused staging table?"),
        user("no"),
    ]
    decisions = section(summarize(msgs), "## Key Decisions")
    assert ("**User agreed** (“yes please”) to: Batching 1000 rows per statement would cut it to a few seconds. "
            "Want me to do this?") in decisions
    assert "**Rejected by the user**: Should I also drop the unused staging table?" in decisions


def test_an_either_or_question_is_not_a_yes_no_offer() -> None:
    msgs = [
        user("Set up the theme"),
        final("Should I pick the colours for you, or would you rather edit the theme file yourself?"),
        user("ok"),
    ]
    assert "User agreed" not in section(summarize(msgs), "## Key Decisions")


def test_under_a_tight_budget_the_users_rules_outlast_the_action_log() -> None:
    rules = ["Never log customer emails or card numbers anywhere, not even at debug level in the workers.",
             "Keep the public API of the billing client unchanged, because three other services import it.",
             "Do not add new dependencies to the package; the standard library is enough for this work.",
             "Always run the linter and the type checker before committing anything to the branch.",
             "Avoid global state in the workers, since they are forked and share nothing after the fork."]
    msgs = [user("Harden the billing client. " + " ".join(rules))]
    for i in range(20):
        msgs += [assistant(call(f"e{i}", "edit", path=f"billing/mod{i}.py", oldText="x = 1\n",
                                newText=f"def guard_{i}():\n    # checks input {i} before the request is sent\n    ...\n")),
                 result(f"e{i}", "edit", "ok")]
    out = extract_summary(make_request(messages=msgs, max_tokens=500))
    kept = section(out, "## Constraints & Preferences")
    assert all(r in kept for r in rules)
    assert section(out, "### Done") != "(none)"  # the action log gives way, but is not emptied
