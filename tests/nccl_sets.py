"""Write NCCL-shaped dump sets (states, times, P2P) for cases gloo cannot record.

Entries follow the field semantics of torch's FR writer (see ``fr_versions.py``);
each helper describes a job in a few lines so a test reads like the scenario.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fr_versions import make_dump, write_dump


def coll(pg: str, desc: str, ranks: list[int], seq: int, state: str = "completed", **kw: Any) -> dict[str, Any]:
    """One collective entry description."""
    return {"pg_name": pg, "pg_desc": desc, "ranks": ranks, "collective_seq_id": seq, "state": state, **kw}


def write_set(
    folder: Path,
    per_rank: dict[int, list[dict[str, Any]]],
    version: str = "2.10",
    fmt: str = "pickle",
    prefix: str = "nccl_trace_rank_",
    pg_ids: dict[tuple[int, str], int] | None = None,
) -> Path:
    """One dump per rank; ``pg_ids`` gives each (rank, pg name) a process-local id."""
    folder.mkdir(parents=True, exist_ok=True)
    for rank, entries in per_rank.items():
        rendered = []
        for i, e in enumerate(entries):
            e = dict(e)
            e.setdefault("record_id", i)
            e.setdefault("pg_id", (pg_ids or {}).get((rank, e["pg_name"]), int(e["pg_name"])))
            e.setdefault("time_created_ns", 1_000_000_000 * (rank + 1) + 1_000_000 * i)
            rendered.append(e)
        dump = make_dump(version, fmt=fmt, entries=rendered)
        suffix = ".json" if fmt == "json" else ""
        write_dump(folder / f"{prefix}{rank}{suffix}", dump, fmt)
    return folder


def tp_job(world: int, steps: int, stuck_rank: int, stuck_state: str = "started") -> dict[int, list[dict[str, Any]]]:
    """A group of ``world`` ranks; every rank but ``stuck_rank`` issues seq ``steps``."""
    ranks = list(range(world))
    per_rank = {}
    for r in ranks:
        entries = [coll("1", "tensor_parallel", ranks, s, op="all_reduce", input_sizes=[[64]]) for s in range(1, steps)]
        if r != stuck_rank:
            entries.append(
                coll("1", "tensor_parallel", ranks, steps, state=stuck_state, op="all_reduce", input_sizes=[[64]])
            )
        per_rank[r] = entries
    return per_rank
