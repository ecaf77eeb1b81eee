"""`compactd prepare FILE --json` as a command (start-up, open, dry run, JSON out): wall time on the
long generated sessions, compacted and uncompacted; and with `--show-text`, which adds the
conversation text (tens of megabytes on the uncompacted path)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator

from bench import Case, Context, scenario
from bench.harness import REPO_ROOT


@scenario("cli_prepare", description="`compactd prepare FILE --json` wall time on the long sessions (s)")
def cli_prepare(ctx: Context) -> Iterator[Case]:
    count = ctx.entry_count()
    for compactions in (True, False):
        path = ctx.entries_session(count, compactions=compactions)
        kind = "compacted" if compactions else "uncompacted"

        for flags in ((), ("--show-text",)):

            def run(path=path, flags=flags) -> None:
                subprocess.run([sys.executable, "-m", "compactd", "prepare", str(path), "--json", *flags],
                               cwd=REPO_ROOT, check=True, stdout=subprocess.DEVNULL)

            label = f"compactd prepare, {count // 1000}k entries, {kind}" + (", with text" if flags else "")
            yield Case(label, run, unit="s", max_repeats=3, extra={"bytes": path.stat().st_size})
