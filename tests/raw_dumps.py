"""Expected values read straight from dump files, without Flight Deck's reader.

Tests of the drill-down compare what the page shows with what the rank wrote. The
expected side is computed here from the raw pickle (our own committed or generated
files), so it does not reuse the code under test.
"""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any


def raw_dump(folder: Path, rank: int) -> dict[str, Any]:
    """The dump of ``rank`` (``rank_<n>`` in ``folder``) as torch wrote it."""
    return pickle.loads((folder / f"rank_{rank}").read_bytes())


def frame_lines(entry: dict[str, Any]) -> list[str]:
    """An entry's stack as ``file:line in function`` lines, innermost first."""
    return [f"{f['filename']}:{f['line']} in {f['name']}" for f in entry.get("frames") or []]


def entry_at(folder: Path, rank: int, pg_name: str, seq: int) -> dict[str, Any] | None:
    """The rank's collective entry at ``seq`` of the group named ``pg_name``, if it has one."""
    for e in raw_dump(folder, rank)["entries"]:
        if e["process_group"][0] == pg_name and e["collective_seq_id"] == seq and not e["is_p2p"]:
            return e
    return None


def newest_in_group(folder: Path, rank: int, pg_name: str) -> dict[str, Any] | None:
    """The rank's newest entry (highest record id) in the group named ``pg_name``."""
    mine = [e for e in raw_dump(folder, rank)["entries"] if e["process_group"][0] == pg_name]
    return max(mine, key=lambda e: e["record_id"]) if mine else None


def stacks_at(folder: Path, ranks: list[int], pg_name: str, seq: int) -> dict[str, list[int]]:
    """Which ranks had which stack (as text) at ``seq`` of ``pg_name``."""
    out: dict[str, list[int]] = {}
    for r in ranks:
        e = entry_at(folder, r, pg_name, seq)
        if e is not None and e.get("frames"):
            out.setdefault("\n".join(frame_lines(e)), []).append(r)
    return out
