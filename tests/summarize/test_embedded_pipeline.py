"""Each stage of the embedded summarizer's pipeline on small synthetic sessions (issue 25):
what an edit or a write changed, command outcomes, resolution by later evidence, dialog acts by
structure, and next steps that respect the user's rules."""

from __future__ import annotations

from compactd.summarize.embedded.edits import Change, describe_edit, describe_write
from compactd.summarize.embedded.facts import collect
from compactd.summarize.embedded.outcomes import run_tally as tally_of
from compactd.summarize.extractive import extract_summary
from tests.support.summarizers import make_request

from .test_extractive import assistant, call, result, section, text, user


def summarize(msgs: list) -> str:
    return extract_summary(make_request(messages=msgs))


# -- extract: edits and writes ------------------------------------------------------------------
def test_an_edit_that_adds_a_function_says_so_in_done() -> None:
    msgs = [
        user("Add a helper that parses durations in src/units.py"),
        assistant(call("e", "edit", path="src/units.py", oldText="import re\n",
                       newText="import re\n\ndef parse_duration(text):\n    # accepts 5s, 2m and 1h\n    ...\n")),
        result("e", "edit", "ok"),
    ]
    done = section(summarize(msgs), "### Done")
    assert "- [x] Edited src/units.py: added parse_duration()" in done
    assert "accepts 5s, 2m and 1h" in done  # one line of what the new text says


def test_a_rename_and_a_removal_are_read_from_old_and_new_text() -> None:
    change = Change("lib/cache.ts", "Edited")
    describe_edit(change, "export function getItem(k) {}\n", "export function fetchItem(k) {}\n")
    describe_edit(change, "function legacy() {}\nconst LIMIT = 3\n", "const LIMIT = 3\n")
    assert change.renamed == [("getItem()", "fetchItem()")]
    assert change.removed == ["legacy()"]
    assert change.line() == "Edited lib/cache.ts (×2): renamed getItem() → fetchItem(); removed legacy()"


def test_a_function_added_and_removed_again_is_named_as_withdrawn() -> None:
    change = Change("io/loader.py", "Edited")
    describe_edit(change, "import csv\n", "import csv\n\ndef sniff_types(rows):\n    ...\n")
    describe_edit(change, "def sniff_types(rows):\n    ...\n", "")
    assert change.added == [] and change.removed == []
    assert change.line() == "Edited io/loader.py (×2): added then removed again sniff_types()"


def test_doc_edits_report_headings_and_what_the_new_text_says() -> None:
    change = Change("docs/config.md", "Edited")
    describe_edit(change, "# Config\n", "# Config\n\n## Retries\nSet `MAX_RETRIES` to bound how often a call is retried.\n")
    line = change.line()
    assert "added “Retries”, `MAX_RETRIES`" in line
    assert "now says “Set `MAX_RETRIES` to bound how often a call is retried.”" in line


def test_a_write_is_described_by_its_docstring_and_definitions() -> None:
    change = Change("tools/report.py", "Wrote")
    describe_write(change, '"""Weekly usage report for the billing team."""\n\n'
                           'def build(rows):\n    ...\n\nclass Row:\n    ...\n')
    assert change.line() == "Wrote tools/report.py: “Weekly usage report for the billing team.”; defines build(), Row"


# -- extract: command outcomes -----------------------------------------------------------------
def test_test_tallies_and_failing_names() -> None:
    out = "FAILED tests/test_io.py::test_roundtrip - assert 1 == 2\n==== 1 failed, 12 passed in 0.5s ===="
    assert tally_of(out) == "1 failed, 12 passed; failing: tests/test_io.py::test_roundtrip"
    assert tally_of("--- FAIL: TestLimiter (0.00s)\nFAIL\tgithub.com/x/y\t0.01s") == "1 packages failed; failing: TestLimiter"
    assert tally_of("hello") == ""


def test_the_tally_of_nodes_own_test_runner() -> None:
    spec = "✔ parses dates (0.4ms)\n✖ rejects empty input (1.2ms)\nℹ tests 6\nℹ pass 5\nℹ fail 1\nℹ todo 0\n"
    assert tally_of(spec).startswith("5 passed, 1 failed")
    assert tally_of("ok 1 - adds\n# tests 3\n# pass 3\n# fail 0\n") == "3 passed"


def test_what_a_script_printed_is_kept() -> None:
    msgs = [
        user("Count the rows in the events table of data.db"),
        assistant(call("q", "bash", command="python3 scripts/count.py data.db")),
        result("q", "bash", "events: 1204"),
    ]
    assert "- [x] Ran `python3 scripts/count.py data.db` → events: 1204" in section(summarize(msgs), "### Done")


# -- resolve: outcomes -------------------------------------------------------------------------
def test_a_failing_run_that_later_passes_leaves_blocked_with_its_counts() -> None:
    msgs = [
        user("Fix the parser tests"),
        assistant(call("a", "bash", command="pytest tests/test_parser.py")),
        result("a", "bash", "E   ValueError: bad token ')'\n==== 1 failed, 4 passed ====\nCommand exited with code 1",
               is_error=True),
        assistant(text("The bug is that the tokenizer never resets its depth counter after a closing paren."),
                  call("b", "edit", path="src/parser.py", oldText="depth = 0", newText="depth = max(depth - 1, 0)")),
        result("b", "edit", "ok"),
        assistant(call("c", "bash", command="pytest tests/test_parser.py")),
        result("c", "bash", "==== 5 passed in 0.1s ===="),
    ]
    out = summarize(msgs)
    assert section(out, "### Blocked") == "(none)"
    done = section(out, "### Done")
    assert "Fixed: ValueError: bad token ')'" in done
    assert "— The bug is that the tokenizer never resets its depth counter" in done  # how it was understood
    assert "- [x] `pytest` passes (5 passed)" in done


def test_an_error_the_assistant_says_it_fixed_is_resolved() -> None:
    msgs = [
        user("Deploy the worker"),
        assistant(call("a", "bash", command="./deploy.sh worker")),
        result("a", "bash", "Error: missing WORKER_TOKEN\nCommand exited with code 1", is_error=True),
        assistant(text("I fixed the missing WORKER_TOKEN by exporting it in .env.")),
    ]
    out = summarize(msgs)
    assert section(out, "### Blocked") == "(none)"
    facts = collect(msgs)
    assert [f.resolved for f in facts.failures] == [True]


def test_an_unrelated_fixed_claim_leaves_the_error_open() -> None:
    msgs = [
        user("Deploy the worker"),
        assistant(call("a", "bash", command="./deploy.sh worker")),
        result("a", "bash", "Error: missing WORKER_TOKEN\nCommand exited with code 1", is_error=True),
        assistant(text("I fixed the typo in README.md.")),
    ]
    assert "missing WORKER_TOKEN" in section(summarize(msgs), "### Blocked")


# -- dialog acts -------------------------------------------------------------------------------
def test_a_no_after_a_proposal_is_a_rejection_with_the_users_reason() -> None:
    msgs = [
        user("The session cache grows without bound, fix it"),
        assistant(text("I propose we store sessions in a global dict keyed by user id.")),
        user("no, don't use a global dict, because it leaks between tests"),
        assistant(text("Understood: I'll keep the cache on the app instance and clear it per request."),
                  call("e", "edit", path="app/cache.py", oldText="x", newText="y")),
        result("e", "edit", "ok"),
    ]
    out = summarize(msgs)
    decisions = section(out, "## Key Decisions")
    rejected = [ln for ln in decisions.splitlines() if ln.startswith("- **Rejected by the user**")]
    assert len(rejected) == 1
    assert "global dict keyed by user id" in rejected[0] and rejected[0].endswith("because it leaks between tests")
    assert "global dict" not in section(out, "### Done")
    assert "- **Adopted instead**: I'll keep the cache on the app instance" in decisions


def test_a_proposal_carried_out_later_is_not_rejected() -> None:
    msgs = [
        user("Tidy the helpers module"),
        assistant(text("I'll move the helpers: `src/helpers.py` becomes `src/util.py`.")),
        user("wait, first run the tests"),
        assistant(call("t", "bash", command="pytest -q")),
        result("t", "bash", "3 passed"),
        assistant(call("m", "bash", command="git mv src/helpers.py src/util.py")),
        result("m", "bash", ""),
    ]
    out = summarize(msgs)
    assert "Rejected" not in section(out, "## Key Decisions")
    assert "Renamed src/helpers.py → src/util.py" in section(out, "### Done")


def test_goal_ignores_pasted_shell_output_and_requests_to_look() -> None:
    msgs = [
        user("open the config file for me"),
        user("$ npm run build\n> app@1.0.0 build\n~/app main\n\nMake the build pass on Node 18."),
    ]
    goal = section(summarize(msgs), "## Goal")
    assert goal == "Make the build pass on Node 18."


def test_next_steps_never_propose_what_the_user_forbade() -> None:
    msgs = [
        user("Split src/app.ts into modules. Stop committing everything, I will commit myself."),
        assistant(call("c", "bash", command='git commit -am "wip"')),
        result("c", "bash", "[main 1234567] wip"),
        assistant(call("e", "edit", path="src/app.ts", oldText="a", newText="b")),
        result("e", "edit", "ok"),
        assistant(text("Split done.")),
    ]
    out = summarize(msgs)
    assert "Stop committing everything, I will commit myself." in section(out, "## Constraints & Preferences")
    assert "Commit" not in section(out, "## Next Steps")


def test_scratch_deletions_are_not_changes() -> None:
    msgs = [
        user("Clean up the files the benchmark left behind in the repository"),
        assistant(call("r", "bash", command="rm -rf /tmp/bench-out && rm old.log")),
        result("r", "bash", ""),
    ]
    out = summarize(msgs)
    assert "/tmp" not in section(out, "### Done") + section(out, "## Critical Context")
    assert section(out, "### Done") == "- [x] Deleted old.log"


def test_an_accepted_plan_is_a_decision_and_its_steps_are_next() -> None:
    msgs = [
        user("Add rate limiting to the API"),
        assistant(text("Here is the plan I propose:\n1. Add a token bucket in `limiter.go`\n"
                       "2. Wire it into the middleware\n3. Document `RATE_LIMIT_RPS` in the README")),
        user("sounds good"),
    ]
    out = summarize(msgs)
    assert "**Plan agreed with the user**: Add a token bucket in `limiter.go`; Wire it into the middleware" in (
        section(out, "## Key Decisions"))
    assert "Document `RATE_LIMIT_RPS` in the README" in section(out, "## Next Steps")


def test_a_polite_refusal_in_a_later_sentence_is_a_rejection() -> None:
    msgs = [
        user("Restructure the CLI so that following a log is easier to discover"),
        assistant(text("I suggest we add a `tail` subcommand and make `-f` an alias of it. Shall I?")),
        user("Thanks for the write-up, it is very clear. I'd rather not add a subcommand, since the runbook "
             "uses the flags and two dialects would confuse people."),
    ]
    decisions = section(summarize(msgs), "## Key Decisions")
    assert decisions.startswith("- **Rejected by the user**: I suggest we add a `tail` subcommand")
    assert "two dialects would confuse people" in decisions


def test_commands_that_show_their_exit_status_and_empty_searches_are_not_blockers() -> None:
    msgs = [
        user("Make the --count flag conflict with --follow in src/cli.rs"),
        assistant(call("a", "bash", command='./target/debug/app -c -f; echo "exit=$?"')),
        result("a", "bash", "error: the argument '--count' cannot be used with '--follow'\nexit=2", is_error=True),
        assistant(call("b", "bash", command="sed -i 's/a/b/' src/cli.rs && grep -n Config src/cli.rs")),
        result("b", "bash", "Command exited with code 1", is_error=True),
        assistant(call("c", "bash", command="grep -rn OldName src/")),  # the bash tool's own empty-output marker
        result("c", "bash", "(no output)\n\nCommand exited with code 1", is_error=True),
    ]
    assert section(summarize(msgs), "### Blocked") == "(none)"


def test_options_put_to_the_user_are_not_done() -> None:
    msgs = [
        user("Decide how usage errors should exit in src/main.rs"),
        assistant(text("There are two ways to go:\n- exit 2 for usage errors, like most tools\n"
                       "- keep exit 1 by mapping the parser error ourselves\nWhich do you prefer?")),
    ]
    done = section(summarize(msgs), "### Done")
    assert "exit 2 for usage errors" not in done and "keep exit 1" not in done


def test_absolute_paths_are_shown_relative_to_the_project_root_named_once() -> None:
    msgs = [
        user("Rename the parser helpers in the app package"),
        assistant(call("a", "edit", path="/home/ana/code/app/src/parse.py", oldText="def old():", newText="def new():"),
                  call("b", "write", path="/home/ana/code/app/tests/test_parse.py", content="def test_new():\n    ...\n")),
        result("a", "edit", "ok"),
        result("b", "write", "ok"),
    ]
    out = summarize(msgs)
    assert "- [x] Edited src/parse.py: renamed old() → new()" in section(out, "### Done")
    critical = section(out, "## Critical Context")
    assert "- Project root: /home/ana/code/app (paths in this summary are relative to it)" in critical
    assert "Files changed: src/parse.py, tests/test_parse.py" in critical


def test_the_opening_message_is_the_goal_even_when_it_mostly_states_rules() -> None:
    msgs = [
        user("ok so we're moving the importer off requests onto httpx. the public functions can NOT change, "
             "two other services import them."),
        assistant(text("Understood.")),
    ]
    out = summarize(msgs)
    assert section(out, "## Goal").startswith("ok so we're moving the importer off requests onto httpx.")
    assert "- the public functions can NOT change, two other services import them." in (
        section(out, "## Constraints & Preferences"))


def test_a_dotted_exception_name_counts_as_a_typed_error_when_fixed() -> None:
    msgs = [
        user("Load the trips file with the new reader in src/load.py"),
        assistant(call("a", "bash", command="python -m pytest -q tests/test_load.py")),
        result("a", "bash", "E   polars.exceptions.ComputeError: could not parse `NA` as i64\n1 failed\n"
               "Command exited with code 1", is_error=True),
        assistant(text("The reader cannot parse `NA` because it does not know it marks a missing value. "
                       "I'll pass null_values=['NA'].")),
        assistant(call("b", "bash", command="python -m pytest -q tests/test_load.py")),
        result("b", "bash", "4 passed"),
    ]
    done = section(summarize(msgs), "### Done")
    assert ("Fixed: polars.exceptions.ComputeError: could not parse `NA` as i64 (from `python -m pytest -q "
            "tests/test_load.py`) — The reader cannot parse `NA` because it does not know it marks a missing value. "
            "I'll pass null_values=['NA'].") in done


def test_switching_program_after_a_failure_is_a_decision() -> None:
    msgs = [
        user("Run the data export script and keep its output in out/"),
        assistant(call("a", "bash", command="python scripts/export.py --out out/")),
        result("a", "bash", "bash: python: command not found\nCommand exited with code 127", is_error=True),
        assistant(call("b", "bash", command="python3 scripts/export.py --out out/")),
        result("b", "bash", "wrote 12 rows"),
    ]
    out = summarize(msgs)
    assert section(out, "### Blocked") == "(none)"
    assert "- **Use `python3` instead of `python`**: `python` failed (bash: python: command not found)" in (
        section(out, "## Key Decisions"))


def test_a_listing_the_user_asked_for_is_kept() -> None:
    msgs = [
        user("show me the migrations folder"),
        assistant(call("a", "bash", command="ls migrations")),
        result("a", "bash", "001_init.sql\n002_users.sql\n003_orders.sql"),
    ]
    done = section(summarize(msgs), "### Done")
    assert "- [x] Showed the user `ls migrations` → 001_init.sql, 002_users.sql, 003_orders.sql" in done


def test_deletions_inside_a_scratch_directory_are_not_changes() -> None:
    msgs = [
        user("Try the installer in a scratch directory and clean up afterwards"),
        assistant(call("a", "bash", command="cd /tmp && rm -rf skills")),
        result("a", "bash", ""),
    ]
    out = summarize(msgs)
    assert "skills" not in section(out, "### Done") + section(out, "## Critical Context")


def _enveloped(code: int, output: str) -> str:
    return (f"Chunk ID: 1f2e3d\nWall time: 0.4 seconds\nProcess exited with code {code}\nOriginal token count: 20\n"
            f"Output:\n{output}")


def test_a_command_output_in_a_harness_envelope_is_judged_and_shown_without_it() -> None:
    msgs = [
        user("Package the docs site"),
        assistant(call("a", "bash", command="make docs-index")),
        result("a", "bash", _enveloped(2, "missing template docs/index.tmpl")),
        assistant(call("b", "bash", command="npm run release")),
        result("b", "bash", _enveloped(0, "\n> release\n> sh scripts/release.sh\n\nsite/dist/docs-1.2.0.tar.gz")),
        assistant(text("The archive is built; the index page still needs its template.")),
    ]
    out = summarize(msgs)
    assert "missing template docs/index.tmpl" in section(out, "### Blocked")  # exit code 2 in the envelope
    assert "- [x] Ran `npm run release` → site/dist/docs-1.2.0.tar.gz" in section(out, "### Done")
    assert "Chunk ID" not in out and "Wall time" not in out


def test_a_failed_in_place_rewrite_is_resolved_by_editing_the_file_directly() -> None:
    msgs = [
        user("Rename the install section of the readme"),
        assistant(call("a", "bash", command="perl -0777 -i -pe 's#\\#\\# Install#\\#\\# Setup#' README.md")),
        result("a", "bash", "Bareword found where operator expected at -e line 1\nCommand exited with code 255",
               is_error=True),
        assistant(text("The perl one-liner failed on the quoting; editing the file directly."),
                  call("b", "edit", path="README.md", oldText="## Install", newText="## Setup")),
        result("b", "edit", "ok"),
    ]
    assert section(summarize(msgs), "### Blocked") == "(none)"


def test_while_files_change_only_the_last_few_glimpses_of_command_output_are_kept() -> None:
    msgs = [user("Move the fixtures of every service under tests/fixtures")]
    for i in range(6):
        msgs += [assistant(call(f"l{i}", "bash", command=f"ls services/svc{i}/fixtures")),
                 result(f"l{i}", "bash", f"orders_{i}.json\nusers_{i}.json\nempty_{i}.json")]
    msgs += [assistant(call("e", "edit", path="tests/conftest.py", oldText="FIXTURES = 'services'",
                            newText="FIXTURES = 'tests/fixtures'")),
             result("e", "edit", "ok")]
    critical = section(summarize(msgs), "## Critical Context")
    assert critical.count("Looked:") == 4 and "orders_5.json" in critical and "orders_1.json" not in critical


def test_the_directory_commands_keep_changing_to_is_said_once() -> None:
    msgs = [user("Regenerate the API client and its docs")]
    for i, cmd in enumerate(("cd /srv/billing && ./gen-client.sh", "cd /srv/billing && ./gen-docs.sh",
                             "cd /opt/vendor && ./fetch-spec.sh")):
        msgs += [assistant(call(f"c{i}", "bash", command=cmd)), result(f"c{i}", "bash", "done")]
    out = summarize(msgs)
    done = section(out, "### Done")
    assert "Ran `./gen-client.sh`" in done and "Ran `./gen-docs.sh`" in done
    assert "Ran `cd /opt/vendor && ./fetch-spec.sh`" in done  # changed to once: kept where it is
    assert "Commands run in: /srv/billing" in section(out, "## Critical Context")


def test_a_lookup_tool_without_a_path_is_not_a_done_line_and_an_action_tool_is() -> None:
    msgs = [
        user("Publish a preview of the pricing page"),
        assistant(call("s", "codebase_search", query="pricing page component")),
        result("s", "codebase_search", "src/pages/pricing.tsx"),
        assistant(call("d", "deploy_preview", branch="pricing")),
        result("d", "deploy_preview", "ok"),
    ]
    done = section(summarize(msgs), "### Done")
    assert "deploy_preview" in done and "codebase_search" not in done
