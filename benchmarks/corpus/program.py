"""What each rank would issue: the job run against a recording ``Comm`` (no torch).

A rank's *program* is the ordered list of what its CPU does: collectives,
batches of send/recv, host synchronisations, and a final stall if a fault
stops it. Programs do not depend on data, so recording them without any
communication gives exactly what the real ranks issue; ``sim`` then works out
how far each rank gets.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import NoReturn

from benchmarks.corpus import fsdp, job
from benchmarks.corpus.comm import Comm, Fault, Spec
from benchmarks.corpus.shapes import Config, module_of
from benchmarks.corpus.topology import Group, Topology

JOB_FILE = str(Path(job.__file__).resolve())
FSDP_JOB_FILE = str(Path(fsdp.__file__).resolve())
COMM_FILE = str(Path(sys.modules[Comm.__module__].__file__ or "").resolve())

# Neutral names of this package's files in recorded stacks (real and synthetic dumps alike).
NEUTRAL_JOB = "/workspace/train.py"
NEUTRAL_COMM = "/workspace/comm.py"
NEUTRAL_LAUNCH = "/workspace/launch.py"
TORCH_C10D = "/usr/lib/python3/site-packages/torch/distributed/distributed_c10d.py"
TORCH_LOGGER = "/usr/lib/python3/site-packages/torch/distributed/c10d_logger.py"
# torch.distributed function per op and the line it calls into C++ from (torch 2.13).
TORCH_FRAMES: dict[str, tuple[str, int]] = {
    "all_reduce": ("all_reduce", 3245),
    "broadcast": ("broadcast", 3049),
    "all_gather": ("all_gather_into_tensor", 4369),
    "barrier": ("barrier", 5228),
    "all_to_all": ("all_to_all_single", 5020),
    "reduce_scatter": ("reduce_scatter_tensor", 4936),
    "send": ("isend", 2672),
    "recv": ("irecv", 2709),
}

Frame = tuple[str, str, int]  # (function, file, line)


@dataclass
class Coll:
    """One collective as a rank issues it."""

    group: Group
    seq: int
    op: str
    in_spec: Spec
    out_spec: Spec
    site: str
    step: int
    stack: tuple[Frame, ...]
    in_splits: list[int] | None = None
    out_splits: list[int] | None = None

    @property
    def nbytes(self) -> int:
        return self.in_spec.nbytes


@dataclass
class P2POp:
    kind: str  # send / recv
    peer: int  # global rank
    group: Group
    spec: Spec
    stack: tuple[Frame, ...]
    p2p_seq: int = 0


@dataclass
class P2PBatch:
    ops: list[P2POp]
    site: str
    step: int


@dataclass
class Sync:
    site: str
    step: int


@dataclass
class Stall:
    fault: Fault
    site: str
    step: int
    next_item: Coll | P2PBatch | None = None  # what it would have issued next (for the truth)


Item = Coll | P2PBatch | Sync | Stall


class _Stop(Exception):
    pass


_NEUTRAL_CACHE: dict[str, str | None] = {}


def _neutral_file(filename: str) -> str | None:
    """The neutral name of the job's and comm layer's files; None for any other file."""
    try:
        return _NEUTRAL_CACHE[filename]
    except KeyError:
        path = str(Path(filename).resolve()) if filename.startswith("/") else filename
        found = {JOB_FILE: NEUTRAL_JOB, FSDP_JOB_FILE: NEUTRAL_JOB, COMM_FILE: NEUTRAL_COMM}.get(path)
        _NEUTRAL_CACHE[filename] = found
        return found


def _frames(extra_torch: str | None) -> tuple[Frame, ...]:
    """The call stack of the op being recorded, innermost first, as a real dump would show it."""
    out: list[Frame] = []
    if extra_torch is not None:
        name, line = TORCH_FRAMES[extra_torch]
        out.append((name, TORCH_C10D, line))
        out.append(("wrapper", TORCH_LOGGER, 83))
    f = sys._getframe(2)
    while f is not None:
        code = f.f_code
        neutral = _neutral_file(code.co_filename)
        if neutral is not None:
            out.append((code.co_name, neutral, f.f_lineno))
            if code.co_name == "train" and neutral == NEUTRAL_JOB:
                break
        f = f.f_back
    out.append(("run_rank", NEUTRAL_LAUNCH, 41))
    out.append(("<module>", NEUTRAL_LAUNCH, 58))
    return tuple(out)


class Recorder(Comm):
    """Writes down a rank's program; a stall ends it."""

    def __init__(self, rank: int, topo: Topology, faults: list[Fault] | tuple[Fault, ...] = ()) -> None:
        super().__init__(rank, topo, faults)
        self.items: list[Item] = []
        self.p2p_seq: dict[str, int] = {}

    def _collective(self, site, group, op, in_spec, out_spec, in_splits, out_splits) -> None:
        self.items.append(
            Coll(
                group=group,
                seq=self.seq[group.name],
                op=op,
                in_spec=in_spec,
                out_spec=out_spec,
                site=site,
                step=self.step,
                stack=_frames(op),
                in_splits=in_splits,
                out_splits=out_splits,
            )
        )

    def _p2p(self, site: str, group: Group, ops: list[tuple[str, int]], spec: Spec) -> None:
        batch = []
        for kind, peer in ops:
            self.p2p_seq[group.name] = self.p2p_seq.get(group.name, 0) + 1
            batch.append(P2POp(kind, peer, group, spec, _frames(kind), self.p2p_seq[group.name]))
        self.items.append(P2PBatch(batch, site, self.step))

    def _sync(self, site: str) -> None:
        self.items.append(Sync(site, self.step))

    def _stall(self, fault: Fault, site: str) -> NoReturn:
        self.items.append(Stall(fault, site, self.step))
        raise _Stop


@dataclass
class Programs:
    """Every rank's program, plus the healthy ones (without faults) for comparison."""

    topo: Topology
    cfg: Config
    faults: tuple[Fault, ...]
    items: dict[int, list[Item]] = field(default_factory=dict)


def record(topo: Topology, cfg: Config, faults: tuple[Fault, ...] | list[Fault] = ()) -> Programs:
    """Record every rank's program under ``faults``."""
    out = Programs(topo, cfg, tuple(faults))
    train = module_of(topo.layout).train
    for rank in range(topo.layout.world_size):
        rec = Recorder(rank, topo, faults)
        try:
            train(rec, cfg)
        except _Stop:
            pass
        out.items[rank] = rec.items
    return out


def occurrences(topo: Topology, cfg: Config, rank: int, step: int) -> list[tuple[str, int, Item]]:
    """(site, index, item) of every op ``rank`` issues in ``step`` of a healthy run, in order.

    Stall points (``get_batch``) and extra points appear with a ``Sync`` placeholder item.
    """
    seen: list[tuple[str, int, Item]] = []

    class _Probe(Recorder):
        def _hook(self, site: str) -> Fault | None:
            index = self._occurrences[site]
            if self.step == step and (site == "get_batch" or site.startswith("extra:")):
                seen.append((site, index, Sync(site, step)))
            return super()._hook(site)

        def _collective(self, site, group, op, in_spec, out_spec, in_splits, out_splits) -> None:
            super()._collective(site, group, op, in_spec, out_spec, in_splits, out_splits)
            if self.step == step:
                seen.append((site, self._occurrences[site] - 1, self.items[-1]))

        def _p2p(self, site: str, group: Group, ops: list[tuple[str, int]], spec: Spec) -> None:
            super()._p2p(site, group, ops, spec)
            if self.step == step:
                seen.append((site, self._occurrences[site] - 1, self.items[-1]))

    probe = _Probe(rank, topo)
    module_of(topo.layout).train(probe, cfg)
    return seen
