"""`compactd serve`: the JSON-RPC daemon over stdio (LSP framing and lifecycle). See protocol.md."""

from __future__ import annotations

import argparse

HELP = "run the JSON-RPC daemon on stdin/stdout (the default command)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--log-level", metavar="LEVEL", default=None,
                        help="log level on stderr: DEBUG, INFO (default), WARNING, ERROR "
                             "(also COMPACTD_LOG_LEVEL)")


def run(args: argparse.Namespace) -> int:
    from compactd.rpc.handlers import create_server
    from compactd.rpc.logs import setup_logging

    setup_logging(args.log_level)
    return create_server().serve_stdio()
