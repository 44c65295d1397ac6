"""Which host each rank ran on: a hostfile (CSV ``rank,host``), or the host names that
launchers put into dump file names (``nccl_trace_host-a_rank_12``).

A bad hostfile is an :class:`InputError` naming the file, the line and the reason.
"""

from __future__ import annotations

import csv
import io
import os
import re
from collections.abc import Iterable
from pathlib import Path

from ..types import DEFAULT_LIMITS, HostMap, InputError
from .discover import KNOWN_PREFIXES, strip_suffixes

#: A host name as RFC 1123 allows it (letters, digits, dots, hyphens), up to 253 characters.
_HOST = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9.-]{0,252})")
_HOST_IN_NAME = re.compile(r"(?:^|_)(?P<host>[A-Za-z0-9][A-Za-z0-9.-]*)_rank_(?P<rank>\d+)$")
#: Words of the standard dump names that precede ``_rank_`` and are not hosts.
_NOT_HOSTS = {"trace", "dump", "nccl", "comm", "lib", "fr"}
MAX_HOSTFILE_BYTES = 64 << 20


def read_hostfile(path: str | Path) -> HostMap:
    """The ``rank,host`` lines of a CSV file (a ``rank,host`` header and ``#`` comments allowed)."""
    name = os.fspath(path)
    try:
        size = os.path.getsize(name)
        if size > MAX_HOSTFILE_BYTES:
            raise InputError(f"hostfile {name}: {size} bytes, more than {MAX_HOSTFILE_BYTES >> 20} MB")
        text = Path(name).read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"hostfile {name}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise InputError(f"hostfile {name}: not UTF-8 text") from None
    listed: dict[int, str] = {}
    for lineno, row in enumerate(csv.reader(io.StringIO(text)), start=1):
        cells = [c.strip() for c in row]
        if not any(cells) or cells[0].startswith("#"):
            continue
        if lineno == 1 and [c.lower() for c in cells] == ["rank", "host"]:
            continue
        rank, host = _row(name, lineno, cells)
        if listed.get(rank, host) != host:
            raise InputError(f"hostfile {name}, line {lineno}: rank {rank} is listed twice ({listed[rank]}, {host})")
        listed[rank] = host
    if not listed:
        raise InputError(f"hostfile {name}: no 'rank,host' line")
    return HostMap(source=f"hostfile {name}", listed=listed)


def _row(name: str, lineno: int, cells: list[str]) -> tuple[int, str]:
    where = f"hostfile {name}, line {lineno}"
    if len(cells) != 2:
        raise InputError(f"{where}: expected 'rank,host', found {len(cells)} field{'s' if len(cells) != 1 else ''}")
    rank_text, host = cells
    if not rank_text.isdigit():
        raise InputError(f"{where}: rank {rank_text!r} is not a whole number")
    rank = int(rank_text)
    if rank > DEFAULT_LIMITS.max_rank:
        raise InputError(f"{where}: rank {rank} is above the limit of {DEFAULT_LIMITS.max_rank}")
    if not _HOST.fullmatch(host):
        raise InputError(f"{where}: {host[:80]!r} is not a host name (letters, digits, '.', '-')")
    return rank, host


def host_in_name(file_name: str) -> str | None:
    """The host a dump file's name carries before ``_rank_<n>``, if any."""
    stem = strip_suffixes(os.path.basename(file_name))
    if any(stem.startswith(p) and stem[len(p) :].isdigit() for p in KNOWN_PREFIXES):
        return None
    match = _HOST_IN_NAME.search(stem)
    if match is None or match.group("host").lower() in _NOT_HOSTS:
        return None
    return match.group("host")


def hosts_from_names(files: Iterable[tuple[int, str]]) -> HostMap | None:
    """Hosts from the names of (rank, file) pairs; None when no name carries one."""
    listed = {rank: host for rank, name in files if (host := host_in_name(name)) is not None}
    return HostMap(source="file names", listed=listed) if listed else None
