"""Read one dump file (pickle or JSON, optionally gzipped) into plain Python data."""

from __future__ import annotations

import contextlib
import gzip
import io
import os
import pickletools
import stat
import zlib
from typing import IO, Any

from ..types import DEFAULT_LIMITS, DumpFormatError, DumpReadError, FileTables, Limits
from . import native
from .fields import EntryFields
from .parse import parse_dump
from .safe_pickle import SizeLimitedReader, UnsafePickleError, load_plain_pickle

_GZIP_MAGIC = b"\x1f\x8b"
_PICKLE_OPCODES = frozenset(op.code.encode("latin-1") for op in pickletools.opcodes)


def _sniff_format(head: bytes) -> str:
    stripped = head.lstrip()
    if stripped.startswith((b"{", b"[")):
        return "json"
    if head[:1] == b"\x80" or head[:1] in (b"(", b"}", b"]"):
        return "pickle"
    if head[:1] in _PICKLE_OPCODES:  # protocol 0/1 may start with any opcode: try, then say which
        return "pickle?"
    raise DumpReadError("neither a pickle nor a JSON document")


def _decode(stream: IO[bytes], limit: int, size_hint: int) -> tuple[Any, str]:
    head = stream.peek(64)[:64] if hasattr(stream, "peek") else b""
    if not head:
        raise DumpReadError("the file is empty")
    fmt = _sniff_format(head)
    if fmt == "json":
        data = stream.read(limit + 1)
        if len(data) > limit:
            raise DumpReadError(f"larger than the size limit of {limit} bytes")
        import orjson  # imported where used: a set of pickles never needs it (16 ms a process)

        try:
            return orjson.loads(data), fmt
        except orjson.JSONDecodeError as exc:
            raise DumpReadError(f"invalid JSON: {exc}") from None
    try:
        return load_plain_pickle(stream, size_hint), "pickle"
    except UnsafePickleError as exc:
        raise DumpReadError(f"unsafe pickle, not loaded: {exc}") from None
    except RecursionError:
        raise DumpReadError("pickle nested too deeply") from None
    except MemoryError:
        raise DumpReadError("pickle asks for more memory than a dump of its size can need") from None
    except ValueError as exc:
        if "size limit" in str(exc):
            raise DumpReadError(str(exc)) from None
        if fmt == "pickle?":
            raise DumpReadError("neither a pickle nor a JSON document") from None
        raise DumpReadError(f"corrupt pickle: {exc}") from None
    except Exception as exc:  # noqa: BLE001 - the C unpickler raises many types on bad bytes
        if fmt == "pickle?":
            raise DumpReadError("neither a pickle nor a JSON document") from None
        raise DumpReadError(f"corrupt or truncated pickle: {type(exc).__name__}: {exc}"[:300]) from None


def _gunzipped_size(raw_file: IO[bytes], size: int, limits: Limits) -> int:
    """The size gzip's trailer records (modulo 4 GiB), never above the size limit; leaves the file at 0."""
    claimed = 0
    if size >= 4:
        raw_file.seek(size - 4)
        claimed = int.from_bytes(raw_file.read(4), "little")
    raw_file.seek(0)
    return min(max(claimed, size), limits.max_file_bytes)


def _open_regular(path: str) -> tuple[io.BufferedReader, int]:
    """Open ``path`` for reading only if it is a regular file; the file and its size.

    Opened non-blocking first: a FIFO named like a dump would otherwise block the open
    forever, and a device (``/dev/zero`` behind a symlink) never ends.
    """
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise DumpReadError("not a regular file (a pipe, socket or device)")
        os.set_blocking(fd, True)
        return open(fd, "rb"), info.st_size  # the caller closes it
    except BaseException:
        os.close(fd)
        raise


def read_raw(path: str, limits: Limits = DEFAULT_LIMITS) -> tuple[Any, str]:
    """Decode ``path`` into plain data; refuses oversize files and code-carrying pickles."""
    try:
        raw_file, size = _open_regular(path)
    except OSError as exc:
        raise DumpReadError(f"cannot read: {exc.strerror or exc}") from None
    if size > limits.max_file_bytes:
        raw_file.close()
        raise DumpReadError(f"{size} bytes is larger than the size limit of {limits.max_file_bytes} bytes")
    try:
        with raw_file:
            if raw_file.read(2) == _GZIP_MAGIC:
                unzipped_size = _gunzipped_size(raw_file, size, limits)
                with gzip.GzipFile(fileobj=raw_file) as gz:
                    limited = io.BufferedReader(SizeLimitedReader(gz, limits.max_file_bytes), 1 << 16)
                    try:
                        return _decode(limited, limits.max_file_bytes, unzipped_size)
                    except (OSError, EOFError) as exc:
                        raise DumpReadError(f"corrupt gzip: {exc}") from None
            raw_file.seek(0)
            return _decode(raw_file, limits.max_file_bytes, size)
    except OSError as exc:
        raise DumpReadError(f"cannot read: {exc.strerror or exc}") from None


def _pickle_bytes(path: str, limits: Limits) -> bytes | None:
    """The whole file (gunzipped) for the native scanner; None if it cannot be read
    plainly, in which case the full path reads it again and says why."""
    try:
        raw_file, size = _open_regular(path)
    except (OSError, DumpReadError):
        return None
    try:
        with raw_file:
            if size > limits.max_file_bytes:
                return None
            data = raw_file.read(limits.max_file_bytes + 1)
        if data[:2] == _GZIP_MAGIC:
            with gzip.GzipFile(fileobj=io.BytesIO(data)) as gz:
                data = gz.read(limits.max_file_bytes + 1)
    except (OSError, EOFError, zlib.error):
        return None
    return data if len(data) <= limits.max_file_bytes else None


def read_dump(path: str, rank: int, limits: Limits = DEFAULT_LIMITS) -> FileTables:
    """Read and validate one rank's dump; raises DumpReadError with a reason on any problem.

    A plain pickle goes through the native scanner when it is built; anything it does not
    take (JSON, odd or broken files) is decoded in full, and so is a stream it took that
    the parse refuses: the unpickler may reject it earlier, and its word is the file's error.
    """
    data = _pickle_bytes(path, limits) if native.available() else None
    scanned = native.scan(data, limits) if data else None
    if scanned:
        raw, fields = scanned
        with contextlib.suppress(DumpFormatError):
            return _parsed(raw, rank, path, "pickle", limits, fields)
    raw, fmt = read_raw(path, limits)
    try:
        return _parsed(raw, rank, path, fmt, limits, None)
    except DumpFormatError as exc:
        raise DumpReadError(f"not a valid Flight Recorder dump: {exc}") from None


def _parsed(raw: Any, rank: int, path: str, fmt: str, limits: Limits, fields: EntryFields | None) -> FileTables:
    """``parse_dump``, its failures of depth and text as read errors."""
    try:
        return parse_dump(raw, rank, path, fmt, limits, fields)
    except RecursionError:
        raise DumpReadError("not a valid Flight Recorder dump: nested too deeply") from None
    except UnicodeEncodeError:  # a lone surrogate (pickle allows them) cannot become Arrow text
        raise DumpReadError("not a valid Flight Recorder dump: text that is not valid Unicode") from None
