"""Run a planned case with real torch over gloo and write its dumps.

The machinery is ``sample_dumps/generate.py``'s: one launcher imports torch
once and forks the ranks; waits are bounded (``work.wait(timeout=...)``); the
parent dumps every rank at one moment once all are finished, blocked, stuck or
dead; frame file names are rewritten to neutral paths; a deadline kills
everything. This module adds the rank body: the job of its shape (``job.py``
or ``fsdp.py``) issued through ``RealComm``.

    python -m benchmarks.corpus.gloo --_launch PLAN   (started by run_case, not by hand)
"""

from __future__ import annotations

import os
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, NoReturn

from benchmarks.corpus import comm as comm_module
from benchmarks.corpus import fsdp, job, program, shapes
from benchmarks.corpus.comm import Comm, Fault, Spec
from benchmarks.corpus.plan import CasePlan
from benchmarks.corpus.topology import Group, Layout, Topology
from sample_dumps import generate as gen

REPO_ROOT = Path(__file__).resolve().parents[2]
FILE_PREFIX = "rank_"
NEUTRAL_FILES = {
    str(Path(job.__file__).resolve()): program.NEUTRAL_JOB,
    str(Path(comm_module.__file__).resolve()): program.NEUTRAL_COMM,
    str(Path(__file__).resolve()): program.NEUTRAL_LAUNCH,
    str(gen.SCRIPT_PATH): "/workspace/launch_ranks.py",
}


class RealComm(Comm):
    """Issues the job's ops with torch.distributed over gloo, each waited with a bound."""

    def __init__(self, ctx: gen.RankContext, topo: Topology, faults: list[Fault]) -> None:
        super().__init__(ctx.rank, topo, faults)
        self.ctx = ctx
        self.pgs: dict[str, Any] = {}
        ctx.extra_summary = lambda: {"issued": dict(self.seq)}  # type: ignore[attr-defined]

    def build_groups(self) -> None:
        """Every rank creates every group, in the same order; checks torch's names match the topology's."""
        import torch.distributed as dist

        self.pgs["0"] = dist.group.WORLD
        for g in self.topo.groups[1:]:
            pg = dist.new_group(list(g.ranks), group_desc=g.desc)
            if self.rank in g.ranks:
                if pg.group_name != g.name:
                    raise RuntimeError(f"group {g.desc} {g.ranks} is named {pg.group_name!r}, expected {g.name!r}")
                self.pgs[g.name] = pg

    @staticmethod
    def _tensor(spec: Spec) -> Any:
        import torch

        return torch.ones(spec.shape, dtype=getattr(torch, spec.dtype))

    def _failed(self, exc: BaseException) -> NoReturn:
        """A peer died: the op cannot even be issued. Block here like a hung job would."""
        self.ctx.waiting_on += f" (issuing it failed: {str(exc).splitlines()[0][:160]})"
        self.ctx.set_state("blocked")
        gen._park(self.ctx)
        raise AssertionError("unreachable")

    def _collective(self, site, group, op, in_spec, out_spec, in_splits, out_splits) -> None:
        import torch.distributed as dist

        pg = self.pgs[group.name]
        self.ctx.waiting_on = f"{op} {group.desc} (group {group.name}) seq {self.seq[group.name]} in {site}"
        t_in = self._tensor(in_spec)
        try:
            if op == "all_reduce":
                work = dist.all_reduce(t_in, group=pg, async_op=True)
            elif op == "broadcast":
                work = dist.broadcast(t_in, src=group.ranks[0], group=pg, async_op=True)
            elif op == "all_gather":
                work = dist.all_gather_into_tensor(self._tensor(out_spec), t_in, group=pg, async_op=True)
            elif op == "barrier":
                work = dist.barrier(group=pg, async_op=True)
            elif op == "all_to_all":
                work = dist.all_to_all_single(
                    self._tensor(out_spec), t_in, out_splits, in_splits, group=pg, async_op=True
                )
            else:
                work = _other_collective(op, self._tensor(out_spec), t_in, pg)
        except RuntimeError as exc:
            self._failed(exc)
        gen.wait_for(self.ctx, work)

    def _p2p(self, site: str, group: Group, ops: list[tuple[str, int]], spec: Spec) -> None:
        import torch.distributed as dist

        pg = self.pgs[group.name]
        works = []
        described = ", ".join(f"{k} {'to' if k == 'send' else 'from'} rank {p}" for k, p in ops)
        self.ctx.waiting_on = f"{site} ({described}, {group.desc}, not recorded by gloo)"
        try:
            for kind, peer in ops:
                t = self._tensor(spec)
                works.append(dist.isend(t, dst=peer, group=pg) if kind == "send" else dist.irecv(t, src=peer, group=pg))
        except RuntimeError as exc:
            self._failed(exc)
        for work in works:
            gen.wait_for(self.ctx, work)

    def _sync(self, site: str) -> None:
        pass  # every gloo op above is already waited for

    def _stall(self, fault: Fault, site: str) -> NoReturn:
        if fault.action == "crash" and fault.arg == "exit":
            self.ctx.waiting_on = f"dead before {site}"
            self.ctx.set_state("dead")
            sys.stdout.flush()
            os._exit(1)
        self.ctx.waiting_on = f"stuck in compute before {site}"
        gen.stuck_in_compute(self.ctx)
        raise AssertionError("unreachable")


def run_rank(plan: dict[str, Any], rank: int) -> None:
    """Body of one forked rank."""
    layout = Layout.from_dict(plan["layout"])
    ctx = gen.RankContext(
        rank=rank,
        layout=layout,  # type: ignore[arg-type]
        plan=plan,
        state_dir=Path(plan["state_dir"]),
        out_dir=Path(plan["out_dir"]),
        deadline=plan["deadline"],
    )
    skip_dump = rank in plan["no_dump"]
    faults = [Fault(**f) for f in plan["faults"]]
    topo = Topology(layout)
    comm = RealComm(ctx, topo, faults)
    threading.Thread(target=gen._dump_thread, args=(ctx, skip_dump), daemon=True).start()

    import torch
    import torch.distributed as dist

    torch.manual_seed(plan["seed"] * 1000 + rank)
    if plan["fill_pg_config"]:
        gen._install_named_gloo(layout.world_size)
    dist.init_process_group(
        "gloo",
        init_method=f"tcp://127.0.0.1:{plan['port']}",
        rank=rank,
        world_size=layout.world_size,
    )
    ctx.log("initialized")
    comm.build_groups()
    ctx.set_state("running")
    shapes.module_of(layout).train(comm, shapes.config_from_dict(layout, plan["job"]))
    ctx.waiting_on = ""
    ctx.set_state("done")
    gen._park(ctx)


def budget_s(plan: CasePlan) -> float:
    """Seconds the whole run may take before it is killed."""
    world = plan.layout.world_size
    ops = sum(len(v) for v in plan.programs.items.values())
    return 60.0 + 2.0 * world + 0.01 * ops + (30.0 if plan.variants.cpp_stacks else 0.0)


def run_case(plan: CasePlan, out_dir: Path) -> gen.RunResult:
    """Run ``plan`` with real processes; the dumps go to ``out_dir`` (``rank_<r>`` or ``rank_<r>.json``)."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    for old in out_dir.glob(f"{FILE_PREFIX}*"):
        old.unlink()
    world = plan.layout.world_size
    started = time.time()
    block_timeout = 1.5 + world / 16
    run = {
        "layout": plan.layout.to_dict(),
        "job": plan.cfg.to_dict(),
        "faults": [f.to_dict() for f in plan.faults],
        "no_dump": plan.no_dump,
        "seed": plan.seed,
        "fill_pg_config": plan.variants.fill_pg_config,
        "dump_format": plan.variants.dump_format,
        "only_active": plan.variants.only_active,
        "cpp_stacks": plan.variants.cpp_stacks,
        "file_prefix": FILE_PREFIX,
        "neutral_files": NEUTRAL_FILES,
        "block_timeout_s": block_timeout,
        "port": gen._free_port(),
        "state_dir": tempfile.mkdtemp(prefix="fr_corpus_"),
        "out_dir": str(out_dir.resolve()),
        "started": started,
        "deadline": started + budget_s(plan),
    }
    env = {
        "TORCH_FR_BUFFER_SIZE": str(plan.variants.buffer_size),
        "PYTHONPATH": str(REPO_ROOT) + (os.pathsep + os.environ["PYTHONPATH"] if os.environ.get("PYTHONPATH") else ""),
    }
    if plan.variants.cpp_stacks:
        env["TORCH_FR_CPP_STACK"] = "1"
    return gen.run_plan(
        run,
        [sys.executable, "-m", "benchmarks.corpus.gloo", "--_launch"],
        missing=set(plan.no_dump),
        env=env,
        terminal_states=("done", "blocked", "stuck", "dead"),
        settle_s=1.0 + world / 32,
        keep_work_on_error=False,
    )


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    if len(args) == 2 and args[0] == "--_launch":
        gen.launch_ranks(args[1], run_rank_fn=run_rank)
        return
    raise SystemExit(__doc__)


# Added with the fsdp shape, below the rest: real dumps' stacks hold this file's line numbers.
NEUTRAL_FILES[str(Path(fsdp.__file__).resolve())] = program.NEUTRAL_JOB


def _other_collective(op: str, out: Any, t_in: Any, pg: Any) -> Any:
    """The ops the Megatron shape does not issue (``RealComm._collective`` issues the others)."""
    import torch.distributed as dist

    if op == "reduce_scatter":
        return _PolledWork(dist.reduce_scatter_tensor(out, t_in, group=pg, async_op=True))
    raise ValueError(op)


class _PolledWork:
    """A work whose ``wait(timeout)`` is bounded.

    gloo's reduce_scatter_tensor (torch 2.13: an all_reduce with a copy chained
    to it) returns a work whose ``wait`` ignores its timeout and whose
    ``is_completed`` stays False; ``gen.wait_for`` needs both to see that the rank
    is blocked. A thread waits on the work without a bound instead.
    """

    def __init__(self, work: Any) -> None:
        self.done = threading.Event()
        self.error: BaseException | None = None
        threading.Thread(target=self._wait, args=(work,), daemon=True).start()

    def _wait(self, work: Any) -> None:
        try:
            work.wait()
        except BaseException as exc:  # noqa: BLE001 - handed to the waiting rank
            self.error = exc
        self.done.set()

    def is_completed(self) -> bool:
        return self.done.is_set()

    def wait(self, timeout: Any = None) -> None:
        if not self.done.wait(None if timeout is None else timeout.total_seconds()):
            raise RuntimeError(f"reduce_scatter not completed after {timeout.total_seconds():.1f}s")
        if self.error is not None:
            raise RuntimeError(str(self.error))


if __name__ == "__main__":
    main()
