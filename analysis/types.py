"""The types every layer shares: files, per-file and per-job tables, limits, errors, and
the words of a verdict as enums.

This module sits at the bottom of the package: it imports nothing from it but the
column names, so any layer may use it without pulling in the loader, the process pool
or the parser.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import pyarrow as pa

from . import schema as s

if TYPE_CHECKING:  # the reader's workers never need pandas
    import pandas as pd

# -- files ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class DumpFile:
    """One rank's dump on disk."""

    path: str
    rank: int


@dataclass(frozen=True, slots=True)
class FileError:
    """A file that could not be used, and why, in words a user can act on."""

    file: str
    error: str


class DumpReadError(Exception):
    """A file that could not be read as a dump; the message says why."""


class DumpFormatError(ValueError):
    """The file parsed, but it is not a Flight Recorder dump of a known shape."""


class LoadCancelled(Exception):
    """A load stopped because its caller asked (the dashboard's cancel button)."""


class InputError(ValueError):
    """Something the user gave (a hostfile, a folder to compare with) cannot be used; the
    message names it and says why."""


@dataclass(frozen=True, slots=True)
class Limits:
    """Bounds on what one dump may contain; a real dump is far below each."""

    max_file_bytes: int = 1 << 30
    max_entries: int = 1_000_000
    max_frames: int = 4096
    max_tensors: int = 65_536
    max_groups: int = 1_000_000
    max_rank: int = 1 << 22
    """Highest global rank a file name or a group's rank list may name."""


DEFAULT_LIMITS = Limits()


# -- tables ----------------------------------------------------------------------------


@dataclass(slots=True)
class FileTables:
    """Everything one file contributes, as Arrow tables ready to concatenate."""

    entries: pa.Table
    stacks: pa.Table
    configs: pa.Table
    status: pa.Table
    meta: pa.Table


@dataclass(slots=True)
class DumpSet:
    """All ranks' dumps as tables. Entries never become per-row Python objects."""

    entries: pd.DataFrame
    stacks: pd.DataFrame
    configs: pd.DataFrame
    status: pd.DataFrame
    files: pd.DataFrame
    file_errors: list[FileError] = field(default_factory=list)

    @property
    def ranks(self) -> list[int]:
        return sorted(self.files[s.RANK].to_numpy(dtype="int64").tolist())


# -- hosts ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class HostMap:
    """Which host each rank ran on: listed rank by rank, or ``ranks_per_node`` consecutive
    ranks per node (rank // N is the node), or both (a listed rank wins)."""

    source: str
    """Where the hosts came from, in words: ``hostfile hosts.csv``, ``8 ranks per node``, ``file names``."""
    listed: dict[int, str] = field(default_factory=dict)
    ranks_per_node: int | None = None

    def __post_init__(self) -> None:
        if self.ranks_per_node is not None and self.ranks_per_node < 1:
            raise InputError(f"--ranks-per-node must be at least 1, not {self.ranks_per_node}")

    def host(self, rank: int) -> str | None:
        """The rank's host, or None where it is not known."""
        found = self.listed.get(rank)
        if found is None and self.ranks_per_node:
            found = f"node{rank // self.ranks_per_node}"
        return found

    def __bool__(self) -> bool:
        return bool(self.listed) or bool(self.ranks_per_node)


# -- the words of a verdict ------------------------------------------------------------


class Verdict(enum.StrEnum):
    """What happened to the job, in one word."""

    HEALTHY = "healthy"
    HANG = "hang"
    MISMATCH = "mismatch"


class FailureClass(enum.StrEnum):
    """Why a suspect rank is one, most telling first (the order decides the report's class)."""

    DESYNC = "desync"
    """At the same sequence the rank issued a different op, or from a different place."""
    SIZE_MISMATCH = "size_mismatch"
    DTYPE_MISMATCH = "dtype_mismatch"
    MISSING_DUMP = "missing_dump"
    MISSING_PARTICIPANT = "missing_participant"
    """Peers issued a collective the rank never issued."""
    P2P_UNMATCHED = "p2p_unmatched"
    STALLED_IN_FLIGHT = "stalled_in_flight"
    """Stuck inside a collective its peers completed, or every member stuck in it."""
    HEALTHY = "healthy"

    @property
    def priority(self) -> int:
        return list(FailureClass).index(self)


class AttributionState(enum.StrEnum):
    """CONTINUE: the job may restart without the suspects. STOP: nothing could be isolated."""

    CONTINUE = "CONTINUE"
    STOP = "STOP"


class Membership(enum.StrEnum):
    """Where a process group's member list comes from."""

    PG_CONFIG = "pg_config"
    INFERRED = "inferred"
