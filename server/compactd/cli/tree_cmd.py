"""`compactd tree FILE`: the session tree; linear runs flat, indentation only at branch points."""

from __future__ import annotations

import argparse
from typing import Any

from compactd.session.views import tree_report

from ._common import add_file_argument, add_json_argument, open_session, print_json, run_guarded

HELP = "show the session tree (branches, labels, the current leaf)"

# Only these keys are the documented `--json` contract; the daemon's session/tree adds more.
_JSON_KEYS = ("id", "parentId", "type", "role", "children", "label")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_file_argument(parser)
    add_json_argument(parser)


def render_tree(report: dict[str, Any]) -> list[str]:
    """Depth-first lines. A chain of single children stays at one indentation level; each branch
    of a node with several children is indented one step under a `├─`/`└─` marker."""
    nodes = {node["id"]: node for node in report["nodes"]}
    child_ids = {c for node in report["nodes"] for c in node["children"]}
    roots = [node["id"] for node in report["nodes"] if node["id"] not in child_ids]
    lines: list[str] = []
    # stack of (node id, prefix for this line, prefix for its continuation)
    stack: list[tuple[str, str, str]] = [(root, "", "") for root in reversed(roots)]
    while stack:
        node_id, prefix, cont = stack.pop()
        node = nodes[node_id]
        marker = "*" if node["isLeaf"] else ("•" if node["onLeafPath"] else " ")
        label = f" [{node['label']}]" if node["label"] else ""
        lines.append(f"{prefix}{marker} {node['id']} {node['kind']:<13}{label} {node['preview']}")
        children = node["children"]
        if len(children) == 1:
            stack.append((children[0], cont, cont))
        else:
            for index in range(len(children) - 1, -1, -1):
                last = index == len(children) - 1
                stack.append((children[index], cont + ("└─" if last else "├─"), cont + ("  " if last else "│ ")))
    return lines


def _run(args: argparse.Namespace) -> int:
    report = tree_report(open_session(args.file))
    if args.json:
        print_json({"leafId": report["leafId"], "nodes": [{k: n[k] for k in _JSON_KEYS} for n in report["nodes"]]})
        return 0
    for line in render_tree(report):
        print(line)
    print(f"\n{len(report['nodes'])} entries, leaf {report['leafId']}  (* leaf, • on the path to the leaf)")
    return 0


def run(args: argparse.Namespace) -> int:
    return run_guarded(_run, args)
