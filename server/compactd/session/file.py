"""The rules that keep a session file safe: read it, append to it, stay in step with other writers,
replace it atomically, back it up (spec §2.5–2.7, D-16..D-18).

Bytes in, bytes out: this module knows lines, offsets, inodes and temp files, nothing about the
tree. `store.Session` owns the entries and asks a `SessionFile` to persist them, so the tree and
the context need no file I/O. Every write leaves the file either as it was or fully written; a
failed write removes what it started (a partial temp file, a half-appended line), so a full disk
does not stay full because of us.
"""

from __future__ import annotations

import filecmp
import io
import os
import re
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


_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
# How long a rewrite watches the old file for late lines: until it stayed still this long, at most
# the limit (a writer caught mid-line, or one that opened the old file just before the rename).
# Pi opens, writes one line and closes within microseconds; the daemon rewrites on its event loop.
CARRY_QUIET_S = 0.002
CARRY_LIMIT_S = 0.5


@dataclass(frozen=True)
class Landed:
    """One line found where an append landed: `ours` is the index of our line it is, -1 for a
    line another writer appended (`raw`, without its newline)."""

    line: int  # line number (1-based)
    ours: int
    raw: bytes


def _landed(region: bytes, first_line: int, lines: Sequence[bytes]) -> list[Landed]:
    """The lines of `region` (complete lines) in file order, ours recognised by their bytes (each
    entry of ours holds a fresh id, so no foreign line has the same bytes)."""
    ours: dict[bytes, list[int]] = {}
    for n, line in enumerate(lines):
        ours.setdefault(bytes(line), []).append(n)  # (lines carried over for another writer may repeat)
    found: list[Landed] = []
    line_no = first_line
    pos = 0
    while pos < len(region):
        newline = region.index(b"\n", pos)
        raw = region[pos : newline + 1]
        waiting = ours.get(raw)
        index = waiting.pop(0) if waiting else -1
        found.append(Landed(line_no, index, raw[:-1] if index < 0 else b""))
        line_no += 1
        pos = newline + 1
    return found


def _append_or_cut(fd: int, data: bytes, fsync: bool) -> None:
    """Write `data` at the end of `fd` (O_APPEND). On failure the part already written is cut off
    again when it is still the file's last bytes (no other writer came after it)."""
    written = 0
    view = memoryview(data)
    try:
        while written < len(data):
            written += os.write(fd, view[written:])
        if fsync:
            os.fsync(fd)
    except BaseException:
        if written:
            end = os.lseek(fd, 0, os.SEEK_CUR)
            if os.fstat(fd).st_size == end and os.pread(fd, written, end - written) == data[:written]:
                os.ftruncate(fd, end - written)
        raise


def _pread_all(fd: int, size: int) -> bytes:
    """The first `size` bytes of `fd` (fewer if the file is shorter); one pread returns at most
    about 2 GiB on Linux."""
    chunks = []
    offset = 0
    while offset < size:
        chunk = os.pread(fd, min(size - offset, 1 << 30), offset)
        if not chunk:
            break
        chunks.append(chunk)
        offset += len(chunk)
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


def _inode_of(path: Path) -> int:
    try:
        return os.stat(path).st_ino
    except FileNotFoundError:
        return -1


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

    def append(self, lines: Sequence[bytes]) -> list[Landed] | None:
        """Append complete lines (each ending with a newline) with one write, and return every line
        between the bytes we knew and the end of ours, in file order: ours, and those another writer
        appended meanwhile (Pi appends with no lock, one write per line). A torn final line is ended
        first (D-18). Nothing is counted as known that was not read. If the write fails (full disk)
        the bytes already written are cut off again, unless someone else wrote after them. On any
        error what we know of the file is as before, so the next check reads whatever did land.
        None: only our lines landed there, in order (the usual case)."""
        known = self.state
        try:
            return self._append(lines, 0)
        except BaseException:
            self.state = known
            raise

    def _append(self, lines: Sequence[bytes], attempt: int) -> list[Landed] | None:
        known = self.state
        assert known is not None
        parts = list(lines) if known.ends_with_newline else [b"\n", *lines]
        data = b"".join(parts)
        fd = os.open(self.path, os.O_RDWR | os.O_APPEND | _CLOEXEC)
        try:
            inode = os.fstat(fd).st_ino
            if inode != known.inode:  # replaced since our last check: nothing written yet
                raise FileRewrittenError(f"Session file was replaced by another process: {self.path}{_RELOAD}")
            _append_or_cut(fd, data, self.fsync)
            # O_APPEND put our bytes at the end of the file as it was then and left the offset just
            # after them; whatever lies between what we knew and that offset is read, not assumed.
            end = os.lseek(fd, 0, os.SEEK_CUR)
            start = known.torn_from if known.torn_from >= 0 else known.size
            region = os.pread(fd, end - start, start)
            if len(region) != end - start or not region.endswith(b"\n"):
                raise FileRewrittenError(
                    f"Session file was truncated by another process while we appended to it: {self.path}; reload it")
            st = os.fstat(fd)
            sampled = fingerprint(fd, known.prelude_len, end)
            if _inode_of(self.path) != inode:
                raise FileRewrittenError(  # (what we wrote went to the old file; its rewriter may have carried it over)
                    f"Session file was replaced by another process while we appended to it: {self.path}; reload it")
        finally:
            os.close(fd)
        first_line = known.lines + (1 if known.torn_from < 0 else 0)
        self.state = FileState(inode, end, st.st_mtime_ns, True, first_line - 1 + region.count(b"\n"),
                               known.prelude_len, sampled)
        if region == data:
            return None  # the usual case: only ours, nothing else landed
        landed = _landed(region, first_line, lines)
        found = {item.ours for item in landed}
        missing = [n for n in range(len(lines)) if n not in found]
        if missing:  # glued to a half-written foreign line: that line is lost, ours are written again whole
            if attempt >= 3:
                raise ConcurrentModificationError(
                    f"Another process is writing partial lines to {self.path}; try again")
            again = self._append([lines[n] for n in missing], attempt + 1)
            if again is None:
                again = [Landed(self.line_count() - len(missing) + 1 + n, n, b"") for n in range(len(missing))]
            landed += [Landed(item.line, missing[item.ours], item.raw) if item.ours >= 0 else item for item in again]
        return landed

    def line_count(self) -> int:
        return self.state.lines if self.state is not None else 0

    def target(self) -> Path:
        """The file a rewrite replaces: the path itself, or what a symbolic link points to (the
        link stays, so Pi opening either name sees the new content)."""
        return Path(os.path.realpath(self.path))

    def rewrite(self, render: Callable[[bytes, int], Sequence[bytes]]) -> list[Landed]:
        """Atomically replace the file with the title slot (if any) and the lines `render` makes:
        temp file beside the target, fsync, rename, fsync of the folder. `render(old, start)` gets
        the file's bytes read and verified right now against what we know (`start`: where the
        header begins), so it can keep the bytes of unchanged lines. A file that changed under us
        is refused (FileRewrittenError) before anything is written. Lines another writer appends to
        the old file up to the rename are carried over into the new file and returned, in file
        order, for adoption. On failure the temp file is removed and the file is as it was."""
        old_fd: int | None = None
        known = self.state
        target = self.target()
        if known is not None:
            # Keep the old file open: a late line would otherwise vanish with the old inode.
            try:
                old_fd = os.open(target, os.O_RDONLY | _CLOEXEC)
            except FileNotFoundError as exc:
                raise ConcurrentModificationError(f"Session file was removed by another process: {self.path}") from exc
        try:
            old = b""
            if known is not None and old_fd is not None:
                old = _pread_all(old_fd, known.size)
                if (os.fstat(old_fd).st_ino != known.inode or len(old) != known.size
                        or fingerprint_of(old, known.prelude_len, known.size) != known.fingerprint):
                    raise FileRewrittenError(f"Session file was changed by another process: {self.path}{_RELOAD}")
            parts = [part for part in render(old, known.prelude_len if known is not None else 0)]
            del old
            target.parent.mkdir(parents=True, exist_ok=True)
            temp = temp_path_for(target)
            try:
                fd = os.open(temp, os.O_RDWR | os.O_CREAT | os.O_TRUNC | _CLOEXEC, 0o644)
                try:
                    write_all_parts(fd, [self.prelude, *parts])
                    os.fsync(fd)
                    size = len(self.prelude) + sum(len(part) for part in parts)
                    sampled = fingerprint(fd, len(self.prelude), size)
                finally:
                    os.close(fd)
                if old_fd is not None:
                    shutil.copymode(target, temp)
                os.replace(temp, target)
            except BaseException:
                _unlink_quietly(temp)
                raise
            fsync_dir(target.parent)
            st = os.stat(target)
            count = len(parts) + (1 if self.prelude else 0)
            self.state = FileState(st.st_ino, size, st.st_mtime_ns, True, count, len(self.prelude), sampled)
            if old_fd is None or known is None:
                return []
            return self._carry_over(old_fd, known.size)
        finally:
            if old_fd is not None:
                os.close(old_fd)

    def _carry_over(self, old_fd: int, copied: int) -> list[Landed]:
        """Complete lines appended to the old file (now unlinked) after the bytes we rewrote are
        appended to the new one. A writer that opened the old file just before the rename may
        write a moment later, and one caught mid-line gets a moment to finish it: the old file is
        watched until it stays still (CARRY_QUIET_S) or CARRY_LIMIT_S passed."""
        landed: list[Landed] = []
        quiet_since = time.monotonic()
        deadline = quiet_since + CARRY_LIMIT_S
        while True:
            size = os.fstat(old_fd).st_size
            if size > copied:
                tail = os.pread(old_fd, size - copied, copied)
                complete = tail[: tail.rfind(b"\n") + 1]
                if complete:
                    lines = [line + b"\n" for line in complete[:-1].split(b"\n")]
                    first = self.line_count() + 1
                    found = self.append(lines)
                    if found is None:
                        found = [Landed(first + n, n, b"") for n in range(len(lines))]
                    landed += [Landed(item.line, -1, lines[item.ours][:-1] if item.ours >= 0 else item.raw)
                               for item in found]
                    copied += len(complete)
                    quiet_since = time.monotonic()
            now = time.monotonic()
            if (size <= copied and now - quiet_since >= CARRY_QUIET_S) or now >= deadline:
                return landed
            time.sleep(0.001)

    def backup(self, base: Path) -> Path:
        """Copy the file's current bytes to `base`, or when that exists with other bytes to the first
        free `<base>.<n>` (backups are never overwritten or removed by compactd), temp + rename so a
        backup is always whole. Nothing is copied when `base` or the latest numbered one already
        holds exactly these bytes. The copy must still hold the bytes we know: a file rewritten by
        another program meanwhile is refused rather than saved under the wrong name."""
        known = self.state
        assert known is not None
        backup = base
        n = 0
        while backup.exists():
            if _same_bytes(backup, self.path):
                return backup
            n += 1
            backup = base.with_name(f"{base.name}.{n}")
        temp = temp_path_for(backup)
        try:
            shutil.copyfile(self.path, temp)
            fd = os.open(temp, os.O_RDONLY | _CLOEXEC)
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
        fsync_dir(backup.parent)
        return backup


def _same_bytes(a: Path, b: Path) -> bool:
    try:
        return filecmp.cmp(a, b, shallow=False)
    except OSError:
        return False


# Temp files of our own naming: `.<name>.<pid>.tmp` (a rewrite) and `.<name>.<suffix>.<pid>.tmp`
# (a backup: `.v1.bak`, `.bak`, `.bak.2`).
_TEMP_RE = re.compile(r"\.(?P<name>.+?)(?:\.v\d+\.bak|\.bak(?:\.\d+)?)?\.(?P<pid>\d+)\.tmp")


def remove_stale_temps(path: Path) -> list[Path]:
    """Remove the temp files a killed compactd left beside `path` (and beside its target when it
    is a symbolic link): only names of our own pattern for this file, and only when the process
    named in them is gone. Returns what was removed."""
    removed: list[Path] = []
    folders = {path.parent}
    real = Path(os.path.realpath(path))
    names = {path.name, real.name}
    folders.add(real.parent)
    for folder in folders:
        try:
            candidates = [entry for entry in os.listdir(folder) if entry.endswith(".tmp") and entry.startswith(".")]
        except OSError:
            continue
        for entry in candidates:
            match = _TEMP_RE.fullmatch(entry)
            if match is None or match.group("name") not in names or _alive(int(match.group("pid"))):
                continue
            try:
                os.unlink(folder / entry)
                removed.append(folder / entry)
            except OSError:
                pass
    return removed


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True  # (our own temp files are removed by the write that made them)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True  # another user's process (or a number no process can have): leave it
    return True
