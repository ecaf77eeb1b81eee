"""`compactd info FILE`: header facts, migration and load warnings."""

from __future__ import annotations

import argparse

from compactd.session.views import info_report

from ._common import add_file_argument, add_json_argument, open_session, print_json, run_guarded

HELP = "show a session file's id, version, migration, entry count, leaf and load warnings"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_file_argument(parser)
    add_json_argument(parser)


def _run(args: argparse.Namespace) -> int:
    report = info_report(open_session(args.file))
    if args.json:
        print_json(report)
        return 0
    print(f"session   {report['sessionId']}")
    migrated = f" (migrated from v{report['migratedFrom']} in memory)" if report["migratedFrom"] else ""
    print(f"version   {report['version']}{migrated}")
    print(f"entries   {report['entryCount']}")
    print(f"leaf      {report['leafId']}")
    if report["name"]:
        print(f"name      {report['name']}")
    print(f"warnings  {len(report['warnings'])}")
    for warning in report["warnings"]:
        print(f"  line {warning['line']}: {warning['message']}")
    return 0


def run(args: argparse.Namespace) -> int:
    return run_guarded(_run, args)
