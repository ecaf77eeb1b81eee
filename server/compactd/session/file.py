"""The rules that keep a session file safe: read it, append to it, stay in step with other writers,
replace it atomically, back it up (spec §2.5–2.7, D-16..D-18).

Bytes in, bytes out: this module knows lines, offsets, inodes and temp files, nothing about the
tree. `store.Session` owns the entries and asks a `SessionFile` to persist them, so the tree and
the context need no file I/O. Every write leaves the file either as it was or fully written; a
failed write removes what it started (a partial temp file, a half-appended line), so a full disk
does not stay full because of us.
"""

from __future__ import annotations

import io
import os
import shutil
import stat as stat_module
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import orjson

from .errors import (
    ConcurrentModificationError,
    FileRewrittenError,
    LoadWarning,
    NotARegularFileError,
)

Entry = dict[str, Any]

# Loader limits (documented in README "Reliability"). A line longer than MAX_LINE_BYTES is skipped
# with a warning instead of being read into memory and parsed; JSON nested deeper than orjson's
# fixed limit (1024 levels) fails to parse and is reported like any other invalid line.
MAX_LINE_BYTES = 64 * 1024 * 1024
_SKIP_CHUNK = 1024 * 1024

# --- integrity fingerprint ---------------------------------------------------------------------
#
# Before adopting lines another program appended we must know the bytes we already read are still
# there: Pi migrates a v1/v2 file *in place* (same inode, new ids, larger file), which inode + size
# alone take for an append. Comparing the whole known prefix would catch everything but costs a full
# re-read of the file on every external append (400 MB for the largest sessions we measured), so
# we keep and compare fixed samples instead: the first 4 KiB after the title slot (the header line),
# the last 4 KiB of the known prefix (our last line at its offset) and six 512-byte spots spread
# evenly in between — under 12 KiB whatever the size. Every rewrite a real writer does changes the
# header or the last line or the inode (Pi's migration rewrites every line; atomic renames change
# the inode; truncation shrinks the file). Only an edit confined to the middle that keeps the size
# and misses every spot would pass, and no writer we know does that.
_RELOAD = "; nothing was written, reload it"
_EDGE = 4096
_SPOT = 512
_SPOTS = 6
_WHOLE_UP_TO = 2 * _EDGE + _SPOTS * _SPOT  # a known prefix this short is sampled whole


def _spans(start: int, end: int) -> list[tuple[int, int]]:
    length = end - start
    if length <= _WHOLE_UP_TO:
        return [(start, length)]
    spans = [(start, _EDGE), (end - _EDGE, _EDGE)]
    spans += [(start + length * k // (_SPOTS + 1), _SPOT) for k in range(1, _SPOTS + 1)]
    return spans


def fingerprint(fd: int, start: int, end: int) -> bytes:
    """The sampled bytes of [start, end) themselves (under 12 KiB, compared byte for byte: no hash
    to compute, no collision); b"" if the file is shorter than `end`."""
    samples = []
    for offset, length in _spans(start, end):
        data = os.pread(fd, length, offset)
        if len(data) != length:
            return b""
        samples.append(data)
    return b"".join(samples)


def fingerprint_of(data: bytes, start: int, end: int) -> bytes:
    """`fingerprint` of a file whose bytes are `data` (read whole). A small file is its own
    fingerprint: `data` itself, not a copy."""
    if len(data) < end:
        return b""
    if start == 0 and end == len(data) and end <= _WHOLE_UP_TO:
        return data
    view = memoryview(data)
    return b"".join([view[offset : offset + length] for offset, length in _spans(start, end)])


# --- oh-my-pi title slot (QO-1..QO-3) ------------------------------------------------------------


def is_title_slot(obj: Any) -> bool:
    """QO-3: a valid slot is `{"type":"title","v":1,...}` with string title/updatedAt/pad."""
    return (
        isinstance(obj, dict)
        and obj.get("type") == "title"
        and obj.get("v") == 1
        and all(isinstance(obj.get(key), str) for key in ("title", "updatedAt", "pad"))
        and obj.get("source", "auto") in ("auto", "user")
    )


def _slot_line(raw: bytes) -> bool:
    if not raw.endswith(b"\n"):
        return False
    try:
        return is_title_slot(orjson.loads(raw))
    except orjson.JSONDecodeError:
        return False


# --- what a read finds ----------------------------------------------------------------------------


@dataclass(frozen=True)
class FileState:
    """What the file looked like after our last read or write (D-18)."""

    inode: int
    size: int
    mtime_ns: int
    ends_with_newline: bool
    lines: int
    prelude_len: int  # bytes of the title slot line before the header (0: none)
    fingerprint: bytes  # `fingerprint` of [prelude_len, size)
    torn_from: int = -1  # where an unterminated last line starts (-1: the file ends with a newline)


@dataclass
class RawFile:
    """The parsed lines of a session file: header first, then (line number, object) per entry."""

    prelude: bytes
    header: Entry | None
    parsed: list[tuple[int, Entry]]
    warnings: list[LoadWarning]
    state: FileState


@dataclass(frozen=True)
class Tail:
    """Complete lines another writer appended after the bytes we know."""

    data: bytes
    first_line: int  # line number of the first line of `data` (1-based)
    state: FileState  # the file state once they are adopted


def _file_kind(mode: int) -> str | None:
    if stat_module.S_ISREG(mode):
        return None
    if stat_module.S_ISDIR(mode):
        return "directory"
    if stat_module.S_ISFIFO(mode):
        return "FIFO (named pipe)"
    if stat_module.S_ISCHR(mode) or stat_module.S_ISBLK(mode):
        return "device"
    if stat_module.S_ISSOCK(mode):
        return "socket"
    return "special file"


def _parse(handle: BinaryIO) -> tuple[bytes, Entry | None, list[tuple[int, Entry]], list[LoadWarning], int, int, int]:
    """(title slot, header, entries, warnings, lines, bytes read, start of the last line)."""
    loads = orjson.loads
    warnings: list[LoadWarning] = []
    parsed: list[tuple[int, Entry]] = []
    header: Entry | None = None
    prelude = b""
    line_no = 0
    size = 0
    last_newline = True
    last_start = 0
    readline = handle.readline
    while raw := readline(MAX_LINE_BYTES + 1):
        line_no += 1
        last_start = size
        size += len(raw)
        last_newline = raw.endswith(b"\n")
        if len(raw) > MAX_LINE_BYTES and not last_newline:
            length = len(raw)  # oversized: skip to the end of the line without keeping it
            while not last_newline and (chunk := readline(_SKIP_CHUNK)):
                length += len(chunk)
                last_newline = chunk.endswith(b"\n")
            size += length - len(raw)
            warnings.append(LoadWarning(line_no, f"line of {length} bytes exceeds the limit of {MAX_LINE_BYTES} bytes; skipped"))
            continue
        if raw.isspace():  # (a blank line; `strip()` would copy every line to find out)
            continue
        try:
            obj = loads(raw)
        except orjson.JSONDecodeError as exc:
            if not last_newline:
                warnings.append(LoadWarning(line_no, "incomplete final line (torn write) skipped"))
            else:
                warnings.append(LoadWarning(line_no, f"invalid JSON skipped: {exc}"))
            continue
        if header is None:
            if line_no == 1 and last_newline and is_title_slot(obj):
                prelude = raw  # oh-my-pi's title slot (QO-1): kept byte for byte, never parsed again
                continue
            if not (isinstance(obj, dict) and obj.get("type") == "session" and isinstance(obj.get("id"), str)):
                return prelude, None, parsed, warnings, line_no, size, last_start  # F-21
            header = obj
            continue
        if not isinstance(obj, dict) or not isinstance(obj.get("type"), str):
            warnings.append(LoadWarning(line_no, "not a session entry (expected an object with a string 'type'); skipped"))
            continue
        parsed.append((line_no, obj))
    return prelude, header, parsed, warnings, line_no, size, last_start if not last_newline else -1


# Files up to this size are read in one go and split in memory (`_read_whole`): the fixed cost of
# a buffered file object and of re-reading the fingerprint's samples is most of a small open.
READ_WHOLE_BYTES = 1024 * 1024


def _read_whole(fd: int) -> RawFile:
    chunks = []
    while chunk := os.read(fd, READ_WHOLE_BYTES + 1):  # to the end, even if the file grew meanwhile
        chunks.append(chunk)
    data = b"".join(chunks)
    prelude, header, parsed, warnings, lines, size, torn_from = _parse(io.BytesIO(data))
    st = os.fstat(fd)
    sampled = fingerprint_of(data, len(prelude), size)
    return _raw_file(prelude, header, parsed, warnings, st, lines, size, torn_from, sampled)


def _raw_file(prelude: bytes, header: Entry | None, parsed: list[tuple[int, Entry]], warnings: list[LoadWarning],
              st: os.stat_result, lines: int, size: int, torn_from: int, sampled: bytes) -> RawFile:
    state = FileState(st.st_ino, size, st.st_mtime_ns, torn_from < 0, lines, len(prelude), sampled, torn_from)
    return RawFile(prelude, header, parsed, warnings, state)


def write_all(fd: int, data: bytes, when_full: Callable[[], None] | None = None) -> None:
    """Every byte of `data`, however many writes it takes (a pipe takes part of a large write
    when a stop signal interrupts it; the buffered file objects lose the rest). On a non-blocking
    `fd`, `when_full()` is called whenever it takes nothing more, to wait until it does."""
    write_all_parts(fd, (data,), when_full)


def write_all_parts(fd: int, parts: Sequence[bytes], when_full: Callable[[], None] | None = None) -> None:
    """`write_all` of the parts joined, without joining them first (`writev`, at most IOV_MAX
    parts a call)."""
    views = [memoryview(part) for part in parts if part]
    start, count = 0, len(views)
    while start < count:
        try:
            written = os.writev(fd, views[start:start + _IOV_MAX])
        except BlockingIOError:
            if when_full is None:
                raise
            when_full()
            continue
        while start < count and written >= len(views[start]):
            written -= len(views[start])
            start += 1
        if written:
            views[start] = views[start][written:]


def _iov_max() -> int:
    """The most buffers one writev takes (Linux and macOS: 1024)."""
    try:
        value = os.sysconf("SC_IOV_MAX")
    except (AttributeError, ValueError, OSError):
        return 16  # POSIX's least
    return value if value > 0 else 1024


_IOV_MAX = _iov_max()


def fsync_dir(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _unlink_quietly(path: Path) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def temp_path_for(path: Path) -> Path:
    """`.<name>.<pid>.tmp` beside `path`: hidden, per process, on the same file system."""
    return path.with_name(f".{path.name}.{os.getpid()}.tmp")


class SessionFile:
    """One session file on disk and what we know of its bytes."""

    def __init__(self, path: Path, *, fsync: bool = False) -> None:
        self.path = path
        self.fsync = fsync
        self.state: FileState | None = None  # None: not written yet (F-17)
        self.prelude = b""  # oh-my-pi title slot line, rewritten verbatim before the header

    @property
    def written(self) -> bool:
        return self.state is not None

    # --- read ------------------------------------------------------------------------------------

    def read(self) -> RawFile:
        """Parse the whole file. Raises FileNotFoundError, NotARegularFileError (at once, before
        reading: a FIFO or /dev/zero would never end) or OSError."""
        # O_NONBLOCK: opening a FIFO for reading must not wait for a writer.
        fd = os.open(self.path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
        try:
            st = os.fstat(fd)
            kind = _file_kind(st.st_mode)
            if kind is not None:
                raise NotARegularFileError(self.path, kind)
            os.set_blocking(fd, True)
            if st.st_size <= READ_WHOLE_BYTES:
                raw = _read_whole(fd)
                os.close(fd)
                return raw
            handle = os.fdopen(fd, "rb")
        except BaseException:
            os.close(fd)
            raise
        with handle:
            prelude, header, parsed, warnings, lines, size, torn_from = _parse(handle)
            st = os.fstat(handle.fileno())
            sampled = fingerprint(handle.fileno(), len(prelude), size)
        return _raw_file(prelude, header, parsed, warnings, st, lines, size, torn_from, sampled)

    def adopt_read(self, raw: RawFile) -> None:
        self.state = raw.state
        self.prelude = raw.prelude

    # --- stay in step with other writers (D-18) ---------------------------------------------------

    def changed(self) -> bool:
        """One stat: True when inode, size or mtime differ from what we know (or the file is gone)."""
        known = self.state
        if known is None:
            return False
        try:
            st = os.stat(self.path)
        except OSError:
            return True
        return (st.st_ino, st.st_size, st.st_mtime_ns) != (known.inode, known.size, known.mtime_ns)

    def check(self) -> Tail | None:
        """What changed on disk since our last read or write: None (nothing), a Tail of complete
        lines appended by another writer, or an error — FileRewrittenError when the bytes we know
        are gone (the caller reloads), ConcurrentModificationError when the file was removed or a
        line is half written (try again)."""
        known = self.state
        assert known is not None
        try:
            st = os.stat(self.path)
        except FileNotFoundError as exc:
            raise ConcurrentModificationError(f"Session file was removed by another process: {self.path}") from exc
        if st.st_ino == known.inode and st.st_size == known.size and st.st_mtime_ns == known.mtime_ns:
            return None
        if st.st_ino != known.inode:
            raise FileRewrittenError(f"Session file was replaced by another process: {self.path}{_RELOAD}")
        if st.st_size < known.size:
            raise FileRewrittenError(f"Session file was truncated by another process: {self.path}{_RELOAD}")
        with open(self.path, "rb") as handle:
            fd = handle.fileno()
            if fingerprint(fd, known.prelude_len, known.size) != known.fingerprint:
                raise FileRewrittenError(
                    "Session file was rewritten in place by another process (the bytes already read changed): "
                    f"{self.path}{_RELOAD}"
                )
            if known.prelude_len:
                slot = os.pread(fd, known.prelude_len, 0)
                if not _slot_line(slot):
                    raise FileRewrittenError(f"The title line of {self.path} was replaced by another process{_RELOAD}")
                self.prelude = slot  # oh-my-pi updates its title slot in place (QO-2)
            if st.st_size == known.size:
                self.state = FileState(known.inode, known.size, st.st_mtime_ns, known.ends_with_newline, known.lines,
                                       known.prelude_len, known.fingerprint, known.torn_from)
                return None
            # A last line read while its writer was still at it is read again whole, from its start.
            start = known.torn_from if known.torn_from >= 0 else known.size
            data = os.pread(fd, st.st_size - start, start)
            if not data.endswith(b"\n"):
                raise ConcurrentModificationError(
                    f"Another process is writing to {self.path} (incomplete line at the end); try again"
                )
            size = start + len(data)
            sampled = fingerprint(fd, known.prelude_len, size)
        first_line = known.lines + (1 if known.torn_from < 0 else 0)
        lines = first_line - 1 + data.count(b"\n")
        state = FileState(known.inode, size, st.st_mtime_ns, True, lines, known.prelude_len, sampled)
        return Tail(data, first_line, state)

    def accept(self, tail: Tail) -> None:
        self.state = tail.state

    # --- writes -----------------------------------------------------------------------------------

    def create(self, lines: list[bytes]) -> None:
        """Write a new file (header + entries) with an exclusive create; an existing empty file
        (F-22) may be claimed too. On failure nothing of ours is left behind."""
        data = b"".join(lines)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        claimed = self.path.exists() and self.path.stat().st_size == 0
        flags = os.O_RDWR | os.O_APPEND | (0 if claimed else os.O_CREAT | os.O_EXCL)
        try:
            fd = os.open(self.path, flags, 0o644)
        except FileExistsError as exc:
            raise ConcurrentModificationError(f"Cannot create session file, it already exists: {self.path}") from exc
        try:
            write_all(fd, data)
            if self.fsync:
                os.fsync(fd)
            st = os.fstat(fd)
            sampled = fingerprint(fd, 0, st.st_size)
        except BaseException:
            if claimed:
                os.ftruncate(fd, 0)
            else:
                _unlink_quietly(self.path)
            raise
        finally:
            os.close(fd)
        self.prelude = b""
        self.state = FileState(st.st_ino, st.st_size, st.st_mtime_ns, True, len(lines), 0, sampled)

    def append(self, data: bytes) -> None:
        """Append complete lines. A torn final line is ended first (D-18). If the write fails
        (full disk) the bytes already written are cut off again, unless someone else wrote since."""
        known = self.state
        assert known is not None
        if not known.ends_with_newline:
            data = b"\n" + data
        fd = os.open(self.path, os.O_RDWR | os.O_APPEND)
        try:
            before = os.fstat(fd).st_size
            try:
                write_all(fd, data)
                if self.fsync:
                    os.fsync(fd)
            except BaseException:
                if os.fstat(fd).st_size > before:
                    os.ftruncate(fd, before)  # O_APPEND: everything past `before` is ours
                raise
            st = os.fstat(fd)
            sampled = fingerprint(fd, known.prelude_len, st.st_size)
        finally:
            os.close(fd)
        lines = known.lines + data.count(b"\n") - (0 if known.ends_with_newline else 1)
        self.state = FileState(st.st_ino, st.st_size, st.st_mtime_ns, True, lines, known.prelude_len, sampled)

    def rewrite(self, lines: list[bytes]) -> Tail | None:
        """Atomically replace the file with the title slot (if any) and `lines`: temp file, fsync,
        rename, fsync of the folder. The caller checked the file just before. A line another writer
        appends to the old file between that check and the rename is carried over into the new
        file and returned for adoption. On failure the temp file is removed and the file is as it was."""
        old_fd: int | None = None
        known = self.state
        if known is not None:
            # Keep the old file open: a late line would otherwise vanish with the old inode.
            old_fd = os.open(self.path, os.O_RDONLY)
        try:
            if known is not None and old_fd is not None:
                if (os.fstat(old_fd).st_ino != known.inode
                        or fingerprint(old_fd, known.prelude_len, known.size) != known.fingerprint):
                    raise FileRewrittenError(f"Session file was changed by another process: {self.path}{_RELOAD}")
            body = b"".join(lines)
            self.path.parent.mkdir(parents=True, exist_ok=True)
            temp = temp_path_for(self.path)
            try:
                fd = os.open(temp, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
                try:
                    write_all(fd, self.prelude + body)
                    os.fsync(fd)
                    sampled = fingerprint(fd, len(self.prelude), len(self.prelude) + len(body))
                finally:
                    os.close(fd)
                os.replace(temp, self.path)
            except BaseException:
                _unlink_quietly(temp)
                raise
            fsync_dir(self.path.parent)
            st = os.stat(self.path)
            count = len(lines) + (1 if self.prelude else 0)
            self.state = FileState(st.st_ino, st.st_size, st.st_mtime_ns, True, count, len(self.prelude), sampled)
            if old_fd is None or known is None:
                return None
            return self._carry_over(old_fd, known.size)
        finally:
            if old_fd is not None:
                os.close(old_fd)

    def _carry_over(self, old_fd: int, known_size: int) -> Tail | None:
        tail = b""
        for _ in range(50):  # a writer caught mid-line gets a moment to finish it
            size = os.fstat(old_fd).st_size
            if size <= known_size:
                return None
            tail = os.pread(old_fd, size - known_size, known_size)
            if tail.endswith(b"\n"):
                break
            time.sleep(0.01)
        complete = tail[: tail.rfind(b"\n") + 1]
        if not complete:
            return None
        assert self.state is not None
        first_line = self.state.lines + 1
        self.append(complete)
        return Tail(complete, first_line, self.state)

    def backup(self, backup: Path) -> None:
        """Copy the file's current bytes to `backup` (temp + rename, so a backup is always whole)
        unless one exists. The copy must still hold the bytes we know: a file rewritten by another
        program meanwhile is refused rather than saved under the wrong name."""
        if backup.exists():
            return
        known = self.state
        assert known is not None
        temp = temp_path_for(backup)
        try:
            shutil.copyfile(self.path, temp)
            fd = os.open(temp, os.O_RDONLY)
            try:
                os.fsync(fd)
                if fingerprint(fd, known.prelude_len, known.size) != known.fingerprint:
                    raise FileRewrittenError(f"Session file was rewritten by another process while it was backed up: {self.path}")
            finally:
                os.close(fd)
            shutil.copystat(self.path, temp)
            os.replace(temp, backup)
        except BaseException:
            _unlink_quietly(temp)
            raise
        fsync_dir(self.path.parent)
