"""What an edit that neither adds a name nor a comment changed: its first added statement (issue 25)."""

from __future__ import annotations

from compactd.summarize.embedded.edits import Change, describe_edit


def test_an_edit_without_new_names_or_comments_shows_its_first_added_statement() -> None:
    change = Change("cmd/server/main.go", "Edited")
    describe_edit(change, "srv := http.Server{}\n", "import \"time\"\nsrv := http.Server{\n    ReadTimeout:   5 * time.Second,\n}\n")
    assert change.line() == "Edited cmd/server/main.go: now has `srv := http.Server{`"
    change = Change("lib/limits.py", "Edited")
    describe_edit(change, "LIMIT = 3\n", "LIMIT = 3\nif   retries >  LIMIT:  raise TooMany(retries)\n")
    assert change.line() == "Edited lib/limits.py: now has `if retries > LIMIT: raise TooMany(retries)`"


def test_a_bare_statement_does_not_replace_what_an_earlier_edit_explained() -> None:
    change = Change("src/report.py", "Edited")
    describe_edit(change, "x = 1\n", "# normalise once so every branch sees the same form\nx = 1\n")
    describe_edit(change, "y = 2\n", "y = 2\nlogger.debug('called with %d bytes', n)\n")
    assert change.line() == "Edited src/report.py (×2): now says “normalise once so every branch sees the same form”"
