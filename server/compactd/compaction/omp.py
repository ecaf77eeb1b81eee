"""oh-my-pi 18 semantics for the behaviours both programs share (decision D-29; statements OMP-n
in docs/omp18-compaction.md): its token counting, compaction preparation, branch preparation,
file lists, `<files>` block and the `xml` transcript it sends a summarizer it does not know.

Used only on oh-my-pi files (or with `compat: "omp"`); Pi files never reach this module, so it
runs interpreted and keeps the compiled Pi paths untouched.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from compactd.session.clock import iso_to_ms

from .branch import BranchPreparation, take_newest_within_budget
from .cut_points import CutPointResult
from .file_ops import FileOperations
from .jscompat import js_json_stringify, js_object_keys, js_sorted
from .prepare import (
    CompactionPreparation,
    NoCompactionReason,
    NotPrepared,
    SourcedPair,
)
from .serialize import truncate_for_summary
from .settings import CompactionSettings

__all__ = [
    "IMAGE_TOKENS",
    "count_message",
    "count_messages",
    "context_tokens",
    "prompt_tokens",
    "last_assistant_usage",
    "strip_read_selector",
    "omp_file_lists",
    "files_block",
    "upsert_files_block",
    "prepare_omp",
    "branch_message",
    "prepare_branch_entries_omp",
    "convert_to_llm_omp",
    "serialize_xml",
    "serialize_for_summary",
]

Entry = dict[str, Any]
Message = dict[str, Any]

# --- token counting (OMP-20..OMP-23) ---------------------------------------------------------

IMAGE_TOKENS = 1200  # a fixed charge per image block


def _fragment(text: Any) -> int:
    """`ceil(UTF-8 bytes / 4)` of one text fragment (lone surrogates weigh 3 bytes, as U+FFFD)."""
    if not isinstance(text, str):
        return 0
    size = len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))
    return (size + 3) >> 2


def _blocks(content: Any) -> tuple[int, int]:
    """(tokens of the non-empty text blocks, image charge) of a string-or-blocks content."""
    if isinstance(content, str):
        return _fragment(content), 0
    tokens = extra = 0
    if isinstance(content, list):
        for block in content:
            if not isinstance(block, dict):
                continue
            kind = block.get("type")
            if kind == "text" and block.get("text"):
                tokens += _fragment(block.get("text"))
            elif kind == "image":
                extra += IMAGE_TOKENS
    return tokens, extra


def count_message(message: Mapping[str, Any]) -> int:
    """oh-my-pi's default tokenizer (no model: every fragment estimated from its bytes)."""
    role = message.get("role")
    if role == "bashExecution":
        return _fragment(message.get("command")) + _fragment(message.get("output"))
    if role in ("user", "developer", "custom", "hookMessage", "toolResult"):
        tokens, extra = _blocks(message.get("content"))
        return tokens + extra
    if role == "assistant":
        tokens = 0
        content = message.get("content")
        for block in content if isinstance(content, list) else ():
            if not isinstance(block, dict):
                continue
            kind = block.get("type")
            if kind == "text":
                tokens += _fragment(block.get("text"))
            elif kind == "thinking":
                tokens += _fragment(block.get("thinking"))
                if block.get("thinkingSignature"):
                    tokens += _fragment(block.get("thinkingSignature"))
            elif kind == "toolCall":
                tokens += _fragment(block.get("name"))
                tokens += _fragment(js_json_stringify(block["arguments"]) if block.get("arguments") is not None else "null")
            elif kind == "redactedThinking":
                tokens += _fragment(block.get("data"))
            elif kind == "anthropicServerTool":
                tokens += _fragment(js_json_stringify(block["block"]) if block.get("block") is not None else "null")
        return tokens
    if role in ("branchSummary", "compactionSummary"):
        return _fragment(message.get("summary"))
    return 0


def count_messages(messages: Iterable[Mapping[str, Any]]) -> int:
    return sum(count_message(m) for m in messages)


def _num(value: Any) -> int | float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return 0
    return int(value) if isinstance(value, float) and value.is_integer() else value


def context_tokens(usage: Mapping[str, Any]) -> int | float:
    """OMP-6: the provider's context figure when given, else total (or the sum of the parts)
    less provider-side orchestration tokens."""
    if "contextTokens" in usage:
        return max(0, _num(usage.get("contextTokens")))
    orchestration = usage.get("orchestration")
    spent: int | float = 0
    if isinstance(orchestration, dict):
        spent = _num(orchestration.get("input")) + _num(orchestration.get("output")) + _num(orchestration.get("cacheRead"))
    raw = _num(usage.get("totalTokens")) or (
        _num(usage.get("input")) + _num(usage.get("output")) + _num(usage.get("cacheRead")) + _num(usage.get("cacheWrite"))
    )
    return max(0, raw - spent)


def prompt_tokens(usage: Mapping[str, Any]) -> int | float:
    """OMP-7: the prompt side of a usage (input + cache read + cache write)."""
    if "contextTokens" in usage:
        return max(0, _num(usage.get("contextTokens")))
    prompt = _num(usage.get("input")) + _num(usage.get("cacheRead")) + _num(usage.get("cacheWrite"))
    return prompt if prompt > 0 else context_tokens(usage)


def last_assistant_usage(path: Sequence[Entry]) -> dict[str, Any] | None:
    """OMP-5: the usage of the newest assistant message that did not abort or fail, anywhere on
    the path (a zero usage counts too)."""
    for index in range(len(path) - 1, -1, -1):
        entry = path[index]
        if entry.get("type") != "message":
            continue
        message = entry.get("message")
        if not isinstance(message, dict) or message.get("role") != "assistant":
            continue
        usage = message.get("usage")
        if message.get("stopReason") not in ("aborted", "error") and isinstance(usage, dict):
            return usage
    return None


# --- file operations (OMP-30..OMP-34) -----------------------------------------------------------

_RANGE = r"L?\d+(?:(?:[-+]|\.\.)L?\d+|-|\.\.)?"
_RANGE_LIST = f"{_RANGE}(?:,{_RANGE})*"
_SELECTOR = re.compile(f"(?:{_RANGE_LIST}|raw|conflicts)", re.IGNORECASE | re.ASCII)
_RANGE_ONLY = re.compile(_RANGE_LIST, re.IGNORECASE | re.ASCII)
_URL_SCHEME = re.compile(r"[a-z][a-z0-9+.-]*://", re.IGNORECASE)
_URL_LIKE = re.compile(r"^[a-z][a-z0-9+.-]*://", re.IGNORECASE)


def strip_read_selector(path: str) -> str:
    """A read path without its trailing line-range / `raw` / `conflicts` selector."""
    colon = path.rfind(":")
    if colon <= 0 or not _SELECTOR.fullmatch(path[colon + 1 :]):
        return path
    outer = path[colon + 1 :]
    base = path[:colon]
    inner = base.rfind(":")
    if inner > 0:
        candidate = base[inner + 1 :]
        inner_raw, outer_raw = candidate.lower() == "raw", outer.lower() == "raw"
        inner_range, outer_range = bool(_RANGE_ONLY.fullmatch(candidate)), bool(_RANGE_ONLY.fullmatch(outer))
        if (inner_raw and outer_range) or (inner_range and outer_raw):
            base = base[:inner]
    return base


def extract_file_ops(message: Mapping[str, Any], ops: FileOperations) -> None:
    """OMP-30: `read`/`write`/`edit` calls with a string path that is not a `scheme://` URL."""
    if message.get("role") != "assistant" or not isinstance(message.get("content"), list):
        return
    for block in message["content"]:
        if not isinstance(block, dict) or block.get("type") != "toolCall" or "name" not in block:
            continue
        args = block.get("arguments")
        path = args.get("path") if isinstance(args, dict) else None
        if not isinstance(path, str) or not path or _URL_SCHEME.search(path):
            continue
        name = block.get("name")
        if name == "read":
            ops.read[strip_read_selector(path)] = None
        elif name == "write":
            ops.written[path] = None
        elif name == "edit":
            ops.edited[path] = None


def seed_ops(entry: Mapping[str, Any], ops: FileOperations) -> None:
    """OMP-31: the lists of a previous entry oh-my-pi made itself (not `fromExtension`)."""
    details = entry.get("details")
    if entry.get("fromExtension") or not isinstance(details, dict):
        return
    if isinstance(details.get("readFiles"), list):
        for name in details["readFiles"]:
            ops.read[strip_read_selector(name) if isinstance(name, str) else name] = None
    if isinstance(details.get("modifiedFiles"), list):
        for name in details["modifiedFiles"]:
            ops.edited[name] = None


def _is_url(path: Any) -> bool:
    return isinstance(path, str) and bool(_URL_SCHEME.search(path))


def omp_file_lists(ops: FileOperations) -> tuple[list[str], list[str]]:
    """OMP-32: (read only, modified), each sorted, `scheme://` entries dropped."""
    modified = {f: None for f in [*ops.edited, *ops.written] if not _is_url(f)}
    read_only = js_sorted(f for f in ops.read if not _is_url(f) and f not in modified)
    return read_only, js_sorted(modified)


FILES_LIST_LIMIT = 20


def _grouped_paths(paths: Sequence[str], mode: Mapping[str, str]) -> str:
    """OMP-33: a prefix-folded directory tree: `#`-headers per folded directory (one more `#`
    per level), a node's own files (basename + mode) before its subdirectories."""

    def node() -> dict[str, Any]:
        return {"files": [], "names": set(), "dirs": {}}

    root = node()
    for raw in paths:
        normalized = raw.replace("\\", "/")
        if _URL_LIKE.match(normalized):
            segments, dir_count = [normalized], 0
        else:
            trimmed = normalized[:-1] if normalized.endswith("/") else normalized
            if not trimmed:
                continue
            segments = trimmed.split("/")
            dir_count = len(segments) if raw.endswith("/") else len(segments) - 1
        current = root
        for segment in segments[:dir_count]:
            current = current["dirs"].setdefault(segment, node())
        if dir_count < len(segments) and segments[-1] not in current["names"]:
            current["names"].add(segments[-1])
            current["files"].append((segments[-1], raw))

    lines: list[str] = []

    def walk(current: dict[str, Any], depth: int) -> None:
        for name, key in current["files"]:
            lines.append(f"{name} ({mode[key]})")
        for name, child in current["dirs"].items():
            parts = [name]
            while not child["files"] and len(child["dirs"]) == 1:
                (only, child), = child["dirs"].items()
                parts.append(only)
            lines.append(f"{'#' * (depth + 1)} {'/'.join(parts)}/")
            walk(child, depth + 1)

    walk(root, 0)
    return "\n".join(lines)


def files_block(read_files: Sequence[str], modified_files: Sequence[str], read_set: Iterable[str] = ()) -> str:
    """OMP-33: the `<files>` block (empty string when there are no files)."""
    if not read_files and not modified_files:
        return ""
    reads = set(read_set)
    mode: dict[str, str] = {f: "Read" for f in read_files}
    for name in modified_files:
        mode[name] = "RW" if name in reads else "Write"
    every = js_sorted(mode)
    listing = _grouped_paths(every[:FILES_LIST_LIMIT], mode)
    if len(every) > FILES_LIST_LIMIT:
        listing += f"\n[…{len(every) - FILES_LIST_LIMIT} files elided…]"
    return f"<files>\n{listing}\n</files>"


_OLD_FILE_TAGS = re.compile(r"<(files|read-files|modified-files)>[\s\S]*?</\1>\s*")


def upsert_files_block(summary: str, ops: FileOperations) -> str:
    """OMP-34: earlier file tags (either program's) removed, then one fresh `<files>` block."""
    base = _OLD_FILE_TAGS.sub("", summary).rstrip()
    read_files, modified_files = omp_file_lists(ops)
    block = files_block(read_files, modified_files, ops.read)
    if not block:
        return base
    return f"{base}\n\n{block}" if base else block


# --- entries as messages ----------------------------------------------------------------------


def _custom_message(entry: Entry) -> Message:
    message: Message = {"role": "custom", "customType": entry.get("customType"), "content": entry.get("content"),
                        "display": entry.get("display")}
    for key in ("details", "attribution"):
        if key in entry:
            message[key] = entry[key]
    message["timestamp"] = iso_to_ms(entry.get("timestamp"))
    return message


def _branch_summary_message(entry: Entry) -> Message:
    return {"role": "branchSummary", "summary": entry.get("summary"), "fromId": entry.get("fromId"),
            "timestamp": iso_to_ms(entry.get("timestamp"))}


def _prepare_message(entry: Entry) -> Message | None:
    """OMP-10: what an entry contributes to a compaction (messages, custom messages, branch
    summaries; nothing else, compactions included)."""
    kind = entry.get("type")
    if kind == "message":
        message = entry.get("message")
        return message if isinstance(message, dict) else None
    if kind == "custom_message":
        return _custom_message(entry)
    if kind == "branch_summary":
        return _branch_summary_message(entry)
    return None


# --- cut point (OMP-11..OMP-14) ---------------------------------------------------------------

_CUT_ROLES = frozenset({"bashExecution", "hookMessage", "branchSummary", "compactionSummary", "user", "assistant"})
_TURN_ROLES = frozenset({"user", "bashExecution"})


def _role(entry: Entry) -> Any:
    message = entry.get("message")
    return message.get("role") if isinstance(message, dict) else None


def _is_cut_point(entry: Entry) -> bool:
    kind = entry.get("type")
    return kind in ("branch_summary", "custom_message") or (kind == "message" and _role(entry) in _CUT_ROLES)


def _is_turn_start(entry: Entry) -> bool:
    kind = entry.get("type")
    return kind in ("branch_summary", "custom_message") or (kind == "message" and _role(entry) in _TURN_ROLES)


def find_cut_point_omp(entries: Sequence[Entry], messages: Sequence[Message], keep_recent_tokens: int | float) -> CutPointResult:
    """OMP-12: walking newest → oldest and checking the budget only at cut points, keep the
    oldest suffix that starts at a cut point and stays within the budget (the newest cut point
    even when it alone exceeds it)."""
    cut_points = [i for i, entry in enumerate(entries) if _is_cut_point(entry)]
    if not cut_points:
        return CutPointResult(0, -1, False)
    accumulated = 0
    pointer = len(cut_points) - 1
    cut = cut_points[pointer]
    for i in range(len(entries) - 1, -1, -1):
        accumulated += count_message(messages[i])
        if pointer < 0 or i != cut_points[pointer]:
            continue
        if accumulated > keep_recent_tokens:
            break
        cut = i
        pointer -= 1
    if _is_turn_start(entries[cut]):
        return CutPointResult(cut, -1, False)
    turn_start = next((i for i in range(cut, -1, -1) if _is_turn_start(entries[i])), -1)
    return CutPointResult(cut, turn_start, turn_start != -1)


# --- preparation (OMP-1..OMP-19) --------------------------------------------------------------

_REMOTE_KEY = "openaiRemoteCompaction"


def _native_remote(preserve: Any) -> bool:
    """A provider-native (OpenAI remote) compaction payload (OMP-3)."""
    candidate = preserve.get(_REMOTE_KEY) if isinstance(preserve, dict) else None
    if not isinstance(candidate, dict) or not isinstance(candidate.get("replacementHistory"), list):
        return False
    if isinstance(candidate.get("provider"), str) and candidate["provider"]:
        return True
    item = candidate.get("compactionItem")
    return isinstance(item, dict) and (
        (item.get("type") == "compaction" and isinstance(item.get("encrypted_content"), str))
        or item.get("type") == "compaction_summary"
    )


_ALREADY = NotPrepared(NoCompactionReason.ALREADY_COMPACTED)
_NOTHING = NotPrepared(NoCompactionReason.NOTHING_TO_COMPACT)
_MIGRATE = NotPrepared(NoCompactionReason.NEEDS_MIGRATION)


def _boundary(path: Sequence[Entry]) -> tuple[int, int]:
    """(index of the previous compaction or -1, first path index the preparation reads)."""
    previous = next((i for i in range(len(path) - 1, -1, -1) if path[i].get("type") == "compaction"), -1)
    reset = next((i for i in range(len(path) - 1, -1, -1) if path[i].get("type") == "reset_boundary"), -1)
    if reset > previous:
        previous = -1
    start = max(previous, reset) + 1
    if previous < 0:
        return previous, start
    entry = path[previous]
    if _native_remote(entry.get("preserveData")):
        through = entry.get("providerReplayThroughEntryId")
        if through:
            at = next((i for i, e in enumerate(path) if e.get("id") == through), -1)
            if 0 <= at < previous:
                start = max(at, reset) + 1
        return previous, start
    for i in range(reset + 1, previous):
        if path[i].get("id") == entry.get("firstKeptEntryId"):
            return previous, i
    return previous, start


def prepare_omp(path_entries: Sequence[Entry], settings: CompactionSettings) -> CompactionPreparation | NotPrepared:
    """oh-my-pi's `prepareCompaction` (no active model: its default tokenizer) over a root-first
    path. Indexes in the result are positions in the path; messages keep their entry ids."""
    path = list(path_entries)
    if path and path[-1].get("type") == "compaction" and not path[-1].get("providerReplayThroughEntryId"):
        return _ALREADY
    previous_index, start = _boundary(path)
    previous = path[previous_index] if previous_index >= 0 else None

    entries: list[Entry] = []
    messages: list[Message] = []
    positions: list[int] = []
    for index in range(start, len(path)):
        message = _prepare_message(path[index])
        if message is None:
            continue
        entries.append(path[index])
        messages.append(message)
        positions.append(index)

    usage = last_assistant_usage(path)
    tokens_before = context_tokens(usage) if usage is not None else 0
    keep: int | float = settings.keep_recent_tokens
    if usage is not None:  # OMP-8: shrink the kept budget by how much the estimate undercounts
        estimated = count_messages(messages)
        ratio = prompt_tokens(usage) / estimated if estimated > 0 else 0
        if math.isfinite(ratio) and ratio > 1:
            keep = max(1, math.floor(keep / ratio))

    cut = find_cut_point_omp(entries, messages, keep)
    if cut.first_kept_entry_index >= len(entries):
        return _NOTHING
    first_kept = entries[cut.first_kept_entry_index]
    if not first_kept.get("id"):
        return _MIGRATE
    history_end = cut.turn_start_index if cut.is_split_turn else cut.first_kept_entry_index

    def pairs(lo: int, hi: int) -> list[SourcedPair]:
        return [(entries[i]["id"], messages[i]) for i in range(lo, hi)]

    summarized = pairs(0, history_end)
    prefix = pairs(cut.turn_start_index, cut.first_kept_entry_index) if cut.is_split_turn else []
    kept = pairs(cut.first_kept_entry_index, len(entries))
    if not summarized and not prefix:
        return _NOTHING

    ops = FileOperations()
    if previous is not None:
        seed_ops(previous, ops)
    for _, message in (*summarized, *prefix):
        extract_file_ops(message, ops)

    first_kept_index = positions[cut.first_kept_entry_index]
    turn_index = positions[cut.turn_start_index] if cut.is_split_turn else -1
    summary = previous.get("summary") if previous is not None else None
    return CompactionPreparation(
        first_kept_entry_id=first_kept["id"],
        first_kept_entry_index=first_kept_index,
        boundary_start=start,
        is_split_turn=cut.is_split_turn,
        turn_start_index=turn_index,
        turn_start_entry_id=entries[cut.turn_start_index]["id"] if cut.is_split_turn else None,
        tokens_before=tokens_before,
        summarized=summarized,
        turn_prefix=prefix,
        kept=kept,
        estimated_tokens_after=count_messages(m for _, m in kept),
        previous_summary=summary if isinstance(summary, str) else None,
        file_ops=ops,
        settings=settings,
        cut=CutPointResult(first_kept_index, turn_index, cut.is_split_turn),
        compat="omp",
    )


# --- branch preparation (OMP-40..OMP-44) ------------------------------------------------------


def branch_message(entry: Entry) -> Message | None:
    """OMP-41: tool results are kept (except those flagged useless and not errors); a
    compaction contributes its summary (with its short summary)."""
    kind = entry.get("type")
    if kind == "message":
        message = entry.get("message")
        if not isinstance(message, dict):
            return None
        if message.get("role") == "toolResult" and message.get("useless") is True and message.get("isError") is not True:
            return None
        return message
    if kind == "custom_message":
        return _custom_message(entry)
    if kind == "branch_summary":
        return _branch_summary_message(entry)
    if kind == "compaction":
        summary: Message = {"role": "compactionSummary", "summary": entry.get("summary")}
        if "shortSummary" in entry:
            summary["shortSummary"] = entry["shortSummary"]
        summary["tokensBefore"] = entry.get("tokensBefore")
        summary["timestamp"] = iso_to_ms(entry.get("timestamp"))
        return summary
    return None


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return "".join(b.get("text") or "" for b in content if isinstance(b, dict) and b.get("type") == "text")


def branch_tokens(message: Mapping[str, Any]) -> int:
    """OMP-42: a tool result weighs what its summary transcript shows (text cut at 2000)."""
    if message.get("role") != "toolResult":
        return count_message(message)
    text = _text_of(message.get("content"))
    return _fragment(truncate_for_summary(text)) if text else 0


class OmpBranchPreparation(BranchPreparation):
    @property
    def file_lists(self) -> tuple[list[str], list[str]]:
        return omp_file_lists(self.file_ops)


def prepare_branch_entries_omp(entries: Sequence[Entry], token_budget: int = 0) -> BranchPreparation:
    """oh-my-pi's `prepareBranchEntries`: file lists of its own earlier branch summaries, then
    messages newest → oldest until the budget (0 = no limit) would overflow; an overflowing
    compaction or branch summary is still taken below 90% of the budget."""
    ops = FileOperations()
    for entry in entries:
        if entry.get("type") == "branch_summary":
            seed_ops(entry, ops)
    taken, total = take_newest_within_budget(
        entries, branch_message, lambda message: extract_file_ops(message, ops), branch_tokens, token_budget
    )
    return OmpBranchPreparation(taken, ops, total)


# --- the summarizer's transcript (OMP-50..OMP-56) ---------------------------------------------

# Our own words before a summary turned into a user message (D-8: tags as oh-my-pi, wording ours).
BRANCH_LEAD = "Summary of a branch explored before coming back here:"
COMPACTION_LEAD = "Earlier work, summarized; continue from it without repeating it."
HANDOFF_LEAD = "Handoff notes written earlier by this agent from the full conversation; continue from them."


def _bash_text(message: Mapping[str, Any]) -> str:
    output = message.get("output")
    text = f"Ran `{message.get('command')}`\n" + (f"```\n{output}\n```" if output else "(no output)")
    code = message.get("exitCode")
    if message.get("cancelled"):
        text += "\n\n(command cancelled)"
    elif code is not None and code != 0:
        text += f"\n\nCommand exited with code {code}"
    return text


def _pruned_content(message: Mapping[str, Any]) -> Any:
    content = message.get("content")
    if message.get("prunedAt") is None or not isinstance(content, list):
        return content
    texts = [b for b in content if isinstance(b, dict) and b.get("type") == "text"]
    text = "".join(b.get("text") or "" for b in texts) or "[Output truncated]"
    first = next((i for i, b in enumerate(content) if isinstance(b, dict) and b.get("type") == "text"), -1)
    if first < 0:
        return [{"type": "text", "text": text}, *content]
    return [b if not (isinstance(b, dict) and b.get("type") == "text") else {"type": "text", "text": text}
            for i, b in enumerate(content) if not (isinstance(b, dict) and b.get("type") == "text") or i == first]


def _convert_one(message: Mapping[str, Any]) -> list[Message]:
    role = message.get("role")
    if role == "bashExecution":
        if message.get("excludeFromContext"):
            return []
        return [{"role": "user", "content": [{"type": "text", "text": _bash_text(message)}]}]
    if role in ("custom", "hookMessage"):
        content = message.get("content")
        if isinstance(content, str):
            return [{"role": "developer", "content": [{"type": "text", "text": content}]}]
        return [{"role": "developer", "content": content}] if isinstance(content, list) else []
    if role == "branchSummary":
        text = f"{BRANCH_LEAD}\n\n<summary>\n{message.get('summary')}\n</summary>"
        return [{"role": "user", "content": [{"type": "text", "text": text}]}]
    if role == "compactionSummary":
        if message.get("method") == "handoff":
            text = f"{HANDOFF_LEAD}\n\n<handoff>\n{message.get('summary')}\n</handoff>"
        else:
            text = f"{COMPACTION_LEAD}\n\n<summary>\n{message.get('summary')}\n</summary>"
        return [{"role": "user", "content": [{"type": "text", "text": text}]}]
    if role == "toolResult":
        return [{**message, "content": _pruned_content(message)}]
    if role in ("user", "developer", "assistant"):
        return [dict(message)]
    return []


def convert_to_llm_omp(messages: Iterable[Mapping[str, Any]]) -> list[Message]:
    """OMP-50: the model messages oh-my-pi makes of agent messages, as far as the transcript
    shows them (custom messages become `developer` text, bash runs user text)."""
    return [converted for message in messages for converted in _convert_one(message)]


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    out = ""
    for block in content if isinstance(content, list) else ():
        if not isinstance(block, dict):
            continue
        if block.get("type") == "text" and isinstance(block.get("text"), str):
            out += block["text"]
        elif block.get("type") == "image":
            out += f"[Image: {block['mimeType']}]" if block.get("mimeType") else "[Image]"
    return out


def _escape_attr(value: Any) -> str:
    text = value if isinstance(value, str) else str(value)
    return text.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;").replace(">", "&gt;")


def _invoke(call: Mapping[str, Any]) -> str:
    body = f'<invoke name="{_escape_attr(call.get("name"))}">'
    arguments = call.get("arguments")
    if isinstance(arguments, dict):
        for key in js_object_keys(arguments):
            body += f'<parameter name="{_escape_attr(key)}">{js_json_stringify(arguments[key])}</parameter>'
    return body + "</invoke>"


def _trim_start(text: str, start: int, end: int) -> int:
    while start < end and text[start] in " \t\n\v\f\r":
        start += 1
    return start


def _trim_end(text: str, start: int, end: int) -> int:
    while end > start and text[end - 1] in " \t\n\v\f\r":
        end -= 1
    return end


_OPEN, _CLOSE = "<thinking>", "</thinking>"


def _close_of(text: str, start: int, end: int) -> int:
    depth, cursor = 1, start
    while cursor < end:
        close = text.find(_CLOSE, cursor)
        if close < 0 or close >= end:
            return -1
        opening = text.find(_OPEN, cursor)
        if 0 <= opening < close:
            depth += 1
            cursor = opening + len(_OPEN)
            continue
        depth -= 1
        if depth == 0:
            return close
        cursor = close + len(_CLOSE)
    return -1


def _unwrap_thinking(text: str) -> str:
    """Thinking that already carries its tags is unwrapped (nested runs joined by newlines)."""
    end = _trim_end(text, 0, len(text))
    cursor = _trim_start(text, 0, end)
    if cursor >= end or not text.startswith(_OPEN, cursor):
        return text
    segments: list[str] = []
    while cursor < end:
        if not text.startswith(_OPEN, cursor):
            return text
        inner = cursor + len(_OPEN)
        inner_end = _close_of(text, inner, end)
        if inner_end < 0:
            return text
        stop = _trim_end(text, inner, inner_end)
        segments.append(_unwrap_thinking(text[_trim_start(text, inner, stop):stop]))
        cursor = _trim_start(text, inner_end + len(_CLOSE), end)
    return "\n".join(segments)


def _assistant_segment(message: Mapping[str, Any]) -> str:
    text, thinking, calls = "", [], []
    for block in message.get("content") or ():
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text":
            text += block.get("text") or ""
        elif kind == "thinking":
            thinking.append(block.get("thinking") or "")
        elif kind == "toolCall":
            calls.append(block)
    joined = "\n".join(thinking)
    rendered = f"{_OPEN}\n{_unwrap_thinking(joined)}\n{_CLOSE}" if joined else ""
    return f"Assistant: {rendered}{text}" + "\n".join(_invoke(call) for call in calls)


def serialize_xml(messages: Sequence[Mapping[str, Any]]) -> str:
    """OMP-52..OMP-55: the `xml` dialect transcript: every turn after a blank line, `Human:` for
    user text and runs of tool results (`<tool_response>` each), `Assistant:` with its
    `<thinking>`, text and `<invoke>` calls; developer text stands alone. Tool results flagged
    useless leave with their calls; the others show their text, cut at 2000 characters."""
    useless = {m.get("toolCallId") for m in messages
               if m.get("role") == "toolResult" and m.get("useless") is True and m.get("isError") is not True}
    processed: list[Mapping[str, Any]] = []
    for message in messages:
        role = message.get("role")
        if role == "assistant":
            content = [b for b in message.get("content") or []
                       if not (isinstance(b, dict) and b.get("type") == "toolCall" and b.get("id") in useless)]
            if content:
                processed.append({**message, "content": content})
        elif role == "toolResult":
            if message.get("toolCallId") in useless:
                continue
            text = _text_of(message.get("content") if isinstance(message.get("content"), list) else [])
            if text:
                processed.append({**message, "content": [{"type": "text", "text": truncate_for_summary(text)}]})
        else:
            processed.append(message)

    out = ""
    i = 0
    while i < len(processed):
        message = processed[i]
        role = message.get("role")
        if role == "assistant":
            out += "\n\n" + _assistant_segment(message)
            i += 1
        elif role == "toolResult":
            results = []
            while i < len(processed) and processed[i].get("role") == "toolResult":
                results.append(f"<tool_response>\n{_content_text(processed[i].get('content'))}\n</tool_response>")
                i += 1
            out += "\n\nHuman: " + "\n".join(results)
        else:
            text = _content_text(message.get("content"))
            if role == "developer":
                if text:
                    out = f"{out}\n\n{text}" if out else text
            else:
                out += "\n\nHuman: " + text
            i += 1
    return out


_BOUNDARY_TAG = re.compile(r"<\s*/?\s*(?:conversation|previous-summary)\s*>", re.IGNORECASE)


def escape_boundary_tags(text: str) -> str:
    """OMP-56: text that could close or imitate the prompt's own tags is defused."""
    return _BOUNDARY_TAG.sub(lambda m: "&lt;" + m.group(0)[1:], text)


def serialize_for_summary(messages: Iterable[Mapping[str, Any]]) -> str:
    """Agent messages → the conversation text oh-my-pi puts between `<conversation>` tags."""
    return escape_boundary_tags(serialize_xml(convert_to_llm_omp(messages)))


# --- the entry written (OMP-60..OMP-64) -------------------------------------------------------

SHORT_SUMMARY_MAX_CHARS = 200
_MARKUP = re.compile(r"^(?:[-*+]\s+|\d+[.)]\s+|>\s*)+")


def short_summary(summary: str) -> str:
    """D-29 (our decision): oh-my-pi asks the model a second time for a one-line summary shown on
    its divider; compactd takes the first line of content of the summary itself (headings,
    list markers and the split-turn separator skipped), cut at a word boundary."""
    for line in summary.splitlines():
        if line.lstrip().startswith("#"):
            continue
        text = _MARKUP.sub("", line.strip()).replace("**", "").replace("__", "").strip()
        if not text or text == "---" or text.endswith(":") and len(text) < 40 or text.startswith("<"):
            continue
        if len(text) <= SHORT_SUMMARY_MAX_CHARS:
            return text
        cut = text[:SHORT_SUMMARY_MAX_CHARS].rsplit(" ", 1)[0]
        return cut.rstrip(",;:") + "…"
    return summary.strip()[:SHORT_SUMMARY_MAX_CHARS]


def tokens_after(summary: str, tokens_before: int | float, kept: Iterable[Mapping[str, Any]]) -> int:
    """OMP-62: the context right after the compaction (its summary message and the kept
    messages) counted as oh-my-pi counts; the system prompt and tool definitions oh-my-pi adds to
    its figure are unknown to compactd and not included."""
    summary_message = {"role": "compactionSummary", "summary": summary, "tokensBefore": tokens_before}
    return count_messages(convert_to_llm_omp([summary_message, *kept]))


def compaction_fields(
    *,
    summary: str,
    short: str | None,
    first_kept_entry_id: str,
    tokens_before: int | float,
    tokens_after_value: int | None,
    details: Any,
    from_extension: bool,
    preserve_data: Any,
) -> dict[str, Any]:
    """OMP-60: a compaction entry's fields in oh-my-pi's order and shape (no `usage`, `fromHook`
    or `systemMessage`; `method` "soft" for a locally generated summary, none for a hook's)."""
    fields: dict[str, Any] = {"type": "compaction", "summary": summary}
    if short is not None:
        fields["shortSummary"] = short
    fields["firstKeptEntryId"] = first_kept_entry_id
    fields["tokensBefore"] = tokens_before
    if tokens_after_value is not None:
        fields["tokensAfter"] = tokens_after_value
    if not from_extension:
        fields["method"] = "soft"
    if details is not None:
        fields["details"] = details
    fields["fromExtension"] = from_extension
    if preserve_data is not None:
        fields["preserveData"] = preserve_data
    return fields
