"""`compactd context FILE [--leaf ID]`: the messages the model would see."""

from __future__ import annotations

import argparse

from compactd.session.views import context_report

from ._common import add_file_argument, add_json_argument, open_session, print_json, require_entry, run_guarded

HELP = "show the context (messages with their source entries) at the leaf or a given entry"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_file_argument(parser)
    parser.add_argument("--leaf", metavar="ID", help="build the context as if this entry were the leaf")
    add_json_argument(parser)


def _run(args: argparse.Namespace) -> int:
    session = open_session(args.file)
    require_entry(session, args.leaf, "--leaf")
    report = context_report(session, args.leaf) if args.leaf else context_report(session)
    if args.json:
        print_json(report)
        return 0
    model = report["model"]
    print(f"leaf {report['leafId']}  model {model['provider'] + '/' + model['modelId'] if model else '-'}"
          f"  thinking {report['thinkingLevel']}  messages {len(report['messages'])}")
    for index, message in enumerate(report["messages"]):
        print(f"{index:5d}  {message['entryId']}  {message['role']}")
    return 0


def run(args: argparse.Namespace) -> int:
    return run_guarded(_run, args)
