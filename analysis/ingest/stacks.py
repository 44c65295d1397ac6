"""Call stacks of one file: each distinct stack checked, printed and hashed once."""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np
import pyarrow as pa

from ..types import DumpFormatError, Limits
from .values import describe, dict_array

_TORCH_INTERNAL = ("/torch/", "c10d_logger.py")


def _file_of(line: str) -> str:
    """The file of a ``file:line in name`` frame line, with forward slashes."""
    return line.split(" in ", 1)[0].rsplit(":", 1)[0].replace("\\", "/")


def call_site(frame_lines: list[str]) -> str:
    """Where the user's code called: the innermost Python frame outside torch itself.

    Stacks recorded with C++ frames (``TORCH_FR_CPP_STACK=1``) interleave C++ frames
    (``??``, ``Ops.cpp``, the interpreter's ``ceval.c``) with the Python ones; those
    are the same for every collective of a kind, so they are never a call site.
    """
    python = [line for line in frame_lines if _file_of(line).endswith(".py")]
    for line in python or frame_lines:
        if not any(marker in _file_of(line) for marker in _TORCH_INTERNAL):
            return line
    return frame_lines[-1] if frame_lines else ""


def is_user_frame(line: str) -> bool:
    """A Python frame of the program itself: not torch's, not C/C++."""
    file = _file_of(line)
    return file.endswith(".py") and not any(marker in file for marker in _TORCH_INTERNAL)


def stack_codes(frames_col: list) -> tuple[np.ndarray, list]:
    """Codes of stacks made of the same frame objects, and the first stack of each code.

    The writer memoizes frame dicts, so in a dump the same frame is the same object. By
    identity, never by ``==``: equal-looking frames (``line`` 1 and True) must each be
    checked and printed, and comparing shared nested values can take exponential time.
    """
    keys = [tuple(map(id, f)) if type(f) is list else id(f) for f in frames_col]
    seen: dict[Any, int] = {}
    codes = np.array([seen.setdefault(k, len(seen)) for k in keys], dtype=np.int32)
    first_of_code = np.unique(codes, return_index=True)[1] if len(codes) else []
    return codes, [frames_col[i] for i in first_of_code]


class Stacks:
    """Distinct call stacks of one file.

    The writer memoizes frame dicts, so in a dump the same frame is the same object:
    a stack is first keyed by the ids of its frames, and its text and hash are built
    once per distinct stack, not once per entry.
    """

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.rows: dict[int, tuple[int, str, str]] = {}

    def encode(self, codes: np.ndarray, distinct: list) -> tuple[pa.Array, pa.DictionaryArray]:
        """Stack ids and call sites per entry (from grouped stacks, as EntryFields.stacks gives
        them); text and hash are built once per distinct stack."""
        ids: list[int] = []
        sites: list[str | None] = []
        lines: dict[int, str] = {}  # frame object id -> its line, while ``distinct`` holds them all
        for frames in distinct:
            if frames is None:
                ids.append(0)
                sites.append(None)
            else:
                sid, site = self._add(frames, lines)
                ids.append(sid)
                sites.append(site)
        is_null = np.array([f is None for f in distinct] or [False])
        values = np.array(ids or [0], dtype=np.int64)[codes] if len(codes) else np.zeros(0, np.int64)
        mask = is_null[codes] if len(codes) else None
        return pa.array(values, mask=mask, type=pa.int64()), dict_array(codes, sites)

    def _add(self, frames: Any, line_of: dict[int, str]) -> tuple[int, str]:
        """The stack's id and call site; ``line_of`` holds the lines of frames seen already
        (the writer shares one frame object among the stacks it appears in: in a typical
        dump 38 distinct frames make 136 frames of stacks)."""
        if type(frames) is not list:
            raise DumpFormatError(f"'frames' is {describe(frames)}, expected a list")
        if len(frames) > self.limits.max_frames:
            raise DumpFormatError(f"an entry has {len(frames)} frames")
        lines = []
        for f in frames:
            text = line_of.get(id(f))
            if text is None:
                text = line_of[id(f)] = _frame_line(f)
            lines.append(text)
        text = "\n".join(lines)
        known = _KNOWN.get(text)
        if known is None:
            if len(_KNOWN) >= _KNOWN_MAX:
                _KNOWN.clear()
            digest = hashlib.blake2b(text.encode("utf-8", "replace"), digest_size=8).digest()
            known = _KNOWN[text] = (int.from_bytes(digest, "little", signed=True), call_site(lines))
        sid, site = known
        if sid not in self.rows:
            self.rows[sid] = (len(lines), text, site)
        return sid, self.rows[sid][2]


def _frame_line(f: Any) -> str:
    """One checked frame as ``file:line in name``."""
    if type(f) is not dict:
        raise DumpFormatError(f"a frame is {describe(f)}, expected a dict")
    name, filename, line = f.get("name"), f.get("filename"), f.get("line")
    if type(name) is not str or type(filename) is not str or len(name) + len(filename) > 8192:
        raise DumpFormatError("a frame has no short string name and filename")
    if line is not None and (type(line) is not int or not -(2**63) <= line < 2**63):
        raise DumpFormatError(f"a frame's line is {describe(line)}")
    return f"{filename}:{line} in {name}"


_KNOWN: dict[str, tuple[int, str]] = {}
"""Each stack's hash and call site by its text, for this process's life: every rank's
dump repeats the same stacks, so a worker reading many files works each out once."""
_KNOWN_MAX = 1 << 14
"""Stacks remembered at most (then forgotten all at once): about 40 MB of text."""
