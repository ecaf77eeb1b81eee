"""Watching open session files (issue 12 §1, §2): the cost of one poll (a stat), of verifying the
known bytes and adopting another writer's appended line (sampled fingerprint), and — for
comparison — of hashing the whole file, which a full-prefix check would pay on every external
append. The first two must not grow with the file; the third does."""

from __future__ import annotations

import hashlib
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

from compactd.session.file import FileState, SessionFile, fingerprint

from bench import Case, Context, scenario

LINE = b'{"type":"message","id":"ext00000","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z","message":{"role":"user","content":"from pi"}}\n'


def _known(path: Path) -> SessionFile:
    """A SessionFile that knows `path` as it is now (without parsing it: only the state matters)."""
    file = SessionFile(path)
    st = os.stat(path)
    with open(path, "rb") as handle:
        digest = fingerprint(handle.fileno(), 0, st.st_size)
    file.state = FileState(st.st_ino, st.st_size, st.st_mtime_ns, True, 0, 0, digest)
    return file


def _full_hash(path: Path) -> str:
    digest = hashlib.blake2b(digest_size=16)
    with open(path, "rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


@scenario("watch_poll", description="file watching: stat poll, verify + adopt an external append, full-file hash")
def watch_poll(ctx: Context) -> Iterator[Case]:
    scratch = ctx.data_dir / "watch"  # copies we append to; overwritten by the next run, never in /tmp
    scratch.mkdir(parents=True, exist_ok=True)
    for label, source in ctx.inputs(fixture=False):
        path = scratch / f"{label}.jsonl"
        shutil.copyfile(source, path)
        file = _known(path)

        yield Case(f"stat poll {label}", file.changed, unit="ops/s", repeats=21)

        def append_external(path: Path = path) -> None:
            with open(path, "ab") as handle:
                handle.write(LINE)

        def verify_and_adopt(file: SessionFile = file) -> None:
            tail = file.check()
            assert tail is not None
            file.accept(tail)

        yield Case(f"verify + adopt append {label}", verify_and_adopt, unit="ms", setup=append_external,
                   repeats=21, extra={"bytes": path.stat().st_size})
        yield Case(f"full-file hash {label}", lambda path=path: _full_hash(path), unit="ms",
                   max_repeats=3, extra={"note": "what a whole-prefix check would cost per external append"})
