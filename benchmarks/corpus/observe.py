"""What a dump set shows, in one shape for real gloo runs and simulated NCCL sets.

The truth of a case is decided from what was injected and from this
observation (each rank's own end state and what it issued), never from an
analyser's output.
"""

from __future__ import annotations

import json
import pickle
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class Observation:
    world: int
    dumps_missing: list[int]
    states: dict[int, str]  # done / blocked / stuck / dead
    waiting: dict[int, str]  # what a blocked / stuck rank waits on, in words
    in_p2p: set[int]  # blocked in a send/recv (which gloo does not record)
    issued: dict[int, dict[str, int]]  # rank -> group name -> last collective seq it issued
    pending: dict[int, list[dict[str, Any]]] = field(default_factory=dict)  # per rank, from its dump
    entries: dict[int, int] = field(default_factory=dict)  # entries per dump
    present: dict[int, set[tuple[str, int]]] = field(default_factory=dict)  # (group, seq) held in each dump

    def implicated(self, rank: int) -> list[dict[str, Any]]:
        """Pending entries of other ranks at a (group, seq) ``rank`` is a member of but never issued."""
        out = []
        for other, pend in self.pending.items():
            if other == rank:
                continue
            for p in pend:
                if p.get("p2p"):
                    continue
                if rank in p["ranks"] and self.issued.get(rank, {}).get(p["pg_name"], 0) < p["seq"]:
                    out.append({"rank": other, **{k: p[k] for k in ("pg_name", "pg_desc", "seq", "op")}})
        return out

    def silent(self, rank: int) -> bool:
        """Its dump is there and holds nothing pending: it finished all it issued, then stopped."""
        return rank not in self.dumps_missing and not self.pending.get(rank)

    def singled_out(self, tp_group: Callable[[int], tuple[int, ...]]) -> list[int]:
        """Ranks the dumps single out: silent, yet a peer waits in a collective they never issued.

        A rank whose whole tensor-parallel group (two or more ranks) is silent is left
        out: a single stuck rank leaves its TP peers waiting, so a group that stopped
        together is what ranks blocked in an unrecorded send/recv look like.
        """
        out = []
        for r in range(self.world):
            if not self.silent(r) or not self.implicated(r):
                continue
            group = tp_group(r)
            if len(group) >= 2 and all(self.silent(q) for q in group):
                continue
            out.append(r)
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "dumps_missing": self.dumps_missing,
            "states": {str(r): s for r, s in sorted(self.states.items())},
            "waiting": {str(r): w for r, w in sorted(self.waiting.items())},
            "blocked_in_send_recv": sorted(self.in_p2p),
            "ranks_without_pending_entries": sorted(
                r for r in range(self.world) if r not in self.dumps_missing and not self.pending.get(r)
            ),
            "pending": {
                str(r): [
                    f"{p['pg_desc']} pg={p['pg_name']} {'p2p_seq' if p.get('p2p') else 'seq'}={p['seq']} {p['op']} "
                    f"in={p['input_sizes']} "
                    f"{p['input_dtypes']}" + (f" {p['state']}" if p.get("state") else "")
                    for p in pend
                ]
                for r, pend in sorted(self.pending.items())
                if pend
            },
            "entries": {str(r): n for r, n in sorted(self.entries.items())},
            "last_issued_seq": {
                str(r): dict(sorted(v.items(), key=lambda kv: int(kv[0]))) for r, v in self.issued.items()
            },
        }


def read_dump(path: Path) -> dict[str, Any]:
    """A dump this generator wrote (trusted: our own files)."""
    data = path.read_bytes()
    if path.name.endswith(".json"):
        return json.loads(data)
    return pickle.loads(data)


def pending_of(dump: dict[str, Any], ranks_of: dict[str, tuple[int, ...]]) -> tuple[list[dict[str, Any]], set]:
    """(pending collective entries, every (group, seq) held) of one dump."""
    pending = []
    present = set()
    for e in dump.get("entries", []):
        name, desc = e["process_group"]
        p2p = bool(e.get("is_p2p"))
        if not p2p:
            present.add((str(name), int(e["collective_seq_id"])))
        if e.get("retired") or e.get("state") == "completed":
            continue
        pending.append(
            {
                "pg_name": str(name),
                "pg_desc": desc,
                "seq": int(e["p2p_seq_id"] if p2p else e["collective_seq_id"]),
                "p2p": p2p,
                "op": e["profiling_name"],
                "input_sizes": e["input_sizes"],
                "input_dtypes": e["input_dtypes"],
                "ranks": ranks_of.get(str(name), ()),
                "state": e.get("state") if str(e["profiling_name"]).startswith("nccl:") else None,
            }
        )
    return pending, present
