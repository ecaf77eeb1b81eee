"""`compactd serve`: the JSON-RPC daemon over stdio (LSP framing and lifecycle). See protocol.md."""

from __future__ import annotations

import argparse

HELP = "run the JSON-RPC daemon on stdin/stdout (the default command)"


def _pid(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a process id: {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"not a process id: {text!r}")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--log-level", metavar="LEVEL", default=None,
                        help="log level on stderr: DEBUG, INFO (default), WARNING, ERROR "
                             "(also COMPACTD_LOG_LEVEL)")
    # What language clients (vscode-languageclient and others) append to the server command.
    parser.add_argument("--stdio", action="store_true",
                        help="speak over stdin/stdout (the only transport, and the default)")
    parser.add_argument("--clientProcessId", dest="client_pid", metavar="PID", type=_pid, default=None,
                        help="exit when the process with this id (the editor) is gone")


def run(args: argparse.Namespace) -> int:
    from compactd.rpc.handlers import create_server
    from compactd.rpc.logs import setup_logging

    setup_logging(args.log_level)
    return create_server().serve_stdio(client_pid=args.client_pid)
