"""The communication layer the training job is written against, and where faults are injected.

The job (``job.py``) calls ``Comm`` methods named after torch.distributed ops,
each with a *site*: the name of the Megatron function that issues it. The same
job code runs against two backends:

* ``program.Recorder`` writes down what each rank would issue (no torch), so
  the parent can plan a case, simulate its outcome and write NCCL-shaped dumps;
* ``gloo.RealComm`` issues the ops with real torch over gloo, inside a rank.

A fault is keyed on (rank, step, site, occurrence of the site within the step)
and applied here, identically for both backends.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace
from typing import Any, NoReturn

from benchmarks.corpus.topology import Group, Topology

# torch dtype name -> (FR dtype string, bytes per element)
DTYPES: dict[str, tuple[str, int]] = {
    "float32": ("Float", 4),
    "bfloat16": ("BFloat16", 2),
    "float16": ("Half", 2),
    "int64": ("Long", 8),
    "int32": ("Int", 4),
    "float64": ("Double", 8),
}
# A dtype of the same width, for dtype_mismatch faults that gloo completes.
SAME_WIDTH = {"float32": "int32", "bfloat16": "float16", "float16": "bfloat16", "int64": "float64"}

STALLS = ("stuck", "crash")
# Faults the job applies itself, on another line of the same function (``Comm.branch_spec``).
BRANCHES = ("size_branch", "dtype_branch")


@dataclass(frozen=True)
class Spec:
    """A tensor's shape and dtype."""

    shape: tuple[int, ...]
    dtype: str

    @property
    def numel(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n

    @property
    def nbytes(self) -> int:
        return self.numel * DTYPES[self.dtype][1]

    def resized(self, how: str) -> Spec:
        """``zero``: no elements; ``reshape``: the same elements in another shape."""
        if how == "zero":
            return replace(self, shape=(0,))
        if len(self.shape) >= 2 and self.shape[::-1] != self.shape:
            return replace(self, shape=self.shape[::-1])
        n = self.numel
        return replace(self, shape=(n // 2, 2) if n % 2 == 0 and n > 2 else (1, n))


@dataclass(frozen=True)
class Fault:
    """What rank ``rank`` does wrong at the ``index``-th ``site`` of step ``step``.

    ``action``: ``stuck`` (sleeps before it), ``crash`` (dies or hangs without a
    dump; ``arg`` ``exit`` or ``hang``), ``skip`` (does not issue it), ``extra``
    (issues one more collective here; ``site`` is ``extra:<where>``, ``arg`` the
    group kind), ``op`` (another op; ``arg`` the op), ``size`` (``arg`` ``zero``
    or ``reshape``), ``dtype`` (``arg`` the dtype), ``a2a`` (the output splits
    expect one row more from group rank ``arg``), ``p2p_skip`` (leaves out its
    ``arg`` = ``send`` or ``recv`` of a send/recv batch), ``size_branch`` and
    ``dtype_branch`` (as ``size`` and ``dtype``, but the job itself builds the
    wrong tensor and issues it from the neighbouring line of the same function:
    see ``branch_spec``).
    """

    rank: int
    action: str
    step: int
    site: str
    index: int = 0
    arg: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "rank": self.rank,
            "action": self.action,
            "step": self.step,
            "site": self.site,
            "index": self.index,
            "arg": self.arg,
        }


class Comm:
    """Collectives as the job calls them; subclasses implement ``_collective``, ``_p2p``, ``_sync``, ``_stall``."""

    def __init__(self, rank: int, topo: Topology, faults: list[Fault] | tuple[Fault, ...] = ()) -> None:
        self.rank = rank
        self.topo = topo
        self.layout = topo.layout
        self.step = -1
        self._occurrences: Counter[str] = Counter()
        self._faults = {(f.step, f.site, f.index): f for f in faults if f.rank == rank}
        self.seq: Counter[str] = Counter()  # group name -> last collective seq issued

    # -- where am I ---------------------------------------------------------
    @property
    def stage(self) -> int:
        return self.layout.coords(self.rank)[0]

    @property
    def first_stage(self) -> bool:
        return self.stage == 0

    @property
    def last_stage(self) -> bool:
        return self.stage == self.layout.pp - 1

    def group(self, kind: str) -> Group:
        g = self.topo.group(kind, self.rank)
        if g is None:
            raise LookupError(f"rank {self.rank} has no {kind} group")
        return g

    def has_group(self, kind: str) -> bool:
        return self.topo.group(kind, self.rank) is not None

    # -- faults -------------------------------------------------------------
    def begin_step(self, step: int) -> None:
        self.step = step
        self._occurrences.clear()

    def _hook(self, site: str) -> Fault | None:
        index = self._occurrences[site]
        self._occurrences[site] += 1
        return self._faults.get((self.step, site, index))

    def stall_point(self, site: str) -> None:
        """A place without a collective where the CPU can get stuck (data loading)."""
        fault = self._hook(site)
        if fault is not None and fault.action in STALLS:
            self._stall(fault, site)

    def extra_point(self, where: str) -> str | None:
        """The group kind of an extra collective to issue here, if this rank's fault says so."""
        fault = self._hook(f"extra:{where}")
        return fault.arg if fault is not None and fault.action == "extra" else None

    def branch_spec(self, site: str, spec: Spec) -> Spec | None:
        """The wrong tensor a rank's other branch passes at the next ``site``, or None on the usual path.

        Real bugs of this kind live in the caller (``if bad: all_reduce(empty_bucket)
        else: all_reduce(bucket)``), so the job asks here which branch to take and
        issues the op itself from the other line: its call site differs from its
        peers' by line number only. It only peeks: the op's own ``_hook`` counts
        the occurrence, so every later call lines up with the program again.
        """
        fault = self._faults.get((self.step, site, self._occurrences[site]))
        if fault is None or fault.action not in BRANCHES:
            return None
        if fault.action == "size_branch":
            return spec.resized(fault.arg)
        return replace(spec, dtype=fault.arg)

    # -- ops ----------------------------------------------------------------
    def all_reduce(self, site: str, kind: str, spec: Spec) -> None:
        fault = self._hook(site)
        op = "all_reduce"
        if fault is not None:
            if fault.action in STALLS:
                self._stall(fault, site)
            if fault.action == "skip":
                return
            if fault.action == "op":
                op = fault.arg
            elif fault.action == "size":
                spec = spec.resized(fault.arg)
            elif fault.action == "dtype":
                spec = replace(spec, dtype=fault.arg)
        self._issue(site, self.group(kind), op, spec, spec)

    def broadcast(self, site: str, kind: str, spec: Spec) -> None:
        fault = self._hook(site)
        op = "broadcast"
        if fault is not None:
            if fault.action in STALLS:
                self._stall(fault, site)
            if fault.action == "skip":
                return
            if fault.action == "op":
                op = fault.arg
        self._issue(site, self.group(kind), op, spec, spec)

    def all_gather(self, site: str, kind: str, spec: Spec) -> None:
        """all_gather_into_tensor: the output stacks every member's input along dim 0."""
        group = self.group(kind)
        fault = self._hook(site)
        if fault is not None:
            if fault.action in STALLS:
                self._stall(fault, site)
            if fault.action == "skip":
                return
        out = replace(spec, shape=(spec.shape[0] * len(group.ranks), *spec.shape[1:]))
        self._issue(site, group, "all_gather", spec, out)

    def barrier(self, site: str) -> None:
        fault = self._hook(site)
        if fault is not None:
            if fault.action in STALLS:
                self._stall(fault, site)
            if fault.action == "skip":
                return
        self._issue(site, self.topo.default, "barrier", Spec((), "float32"), Spec((), "float32"))

    def all_to_all(self, site: str, kind: str, in_splits: list[int], out_splits: list[int], row: Spec) -> None:
        """all_to_all_single with split sizes in rows of ``row``'s shape."""
        fault = self._hook(site)
        if fault is not None:
            if fault.action in STALLS:
                self._stall(fault, site)
            if fault.action == "skip":
                return
            if fault.action == "a2a":
                out_splits = list(out_splits)
                out_splits[int(fault.arg)] += 1
        in_spec = replace(row, shape=(sum(in_splits), *row.shape))
        out_spec = replace(row, shape=(sum(out_splits), *row.shape))
        self._issue(site, self.group(kind), "all_to_all", in_spec, out_spec, list(in_splits), list(out_splits))

    def p2p(self, site: str, ops: list[tuple[str, int]], spec: Spec) -> None:
        """A batch of isend/irecv to pipeline neighbours (global ranks), posted together, then waited."""
        fault = self._hook(site)
        if fault is not None:
            if fault.action in STALLS:
                self._stall(fault, site)
            if fault.action == "p2p_skip":
                ops = [op for op in ops if op[0] != fault.arg]
        if ops:
            self._p2p(site, self.group("pp"), ops, spec)

    def sync(self, site: str) -> None:
        """A host synchronisation (``.item()``, ``.cpu()``): the CPU waits for the device's queued work."""
        self._sync(site)

    # -- backend ------------------------------------------------------------
    def _issue(
        self,
        site: str,
        group: Group,
        op: str,
        in_spec: Spec,
        out_spec: Spec,
        in_splits: list[int] | None = None,
        out_splits: list[int] | None = None,
    ) -> None:
        self.seq[group.name] += 1
        self._collective(site, group, op, in_spec, out_spec, in_splits, out_splits)

    def _collective(
        self,
        site: str,
        group: Group,
        op: str,
        in_spec: Spec,
        out_spec: Spec,
        in_splits: list[int] | None,
        out_splits: list[int] | None,
    ) -> None:
        raise NotImplementedError

    def _p2p(self, site: str, group: Group, ops: list[tuple[str, int]], spec: Spec) -> None:
        raise NotImplementedError

    def _sync(self, site: str) -> None:
        raise NotImplementedError

    def _stall(self, fault: Fault, site: str) -> NoReturn:
        raise NotImplementedError

    # -- ops added with the fsdp shape (kept below the others: recorded stacks hold this file's line numbers)
    def reduce_scatter(self, site: str, kind: str, spec: Spec) -> None:
        """reduce_scatter_tensor: the input is every member's share laid end to end; each gets its share."""
        group = self.group(kind)
        fault = self._hook(site)
        if fault is not None:
            if fault.action in STALLS:
                self._stall(fault, site)
            if fault.action == "skip":
                return
            if fault.action == "size":
                spec = spec.resized(fault.arg)
            elif fault.action == "dtype":
                spec = replace(spec, dtype=fault.arg)
        out = replace(spec, shape=(spec.numel // len(group.ranks),))
        self._issue(site, group, "reduce_scatter", spec, out)
