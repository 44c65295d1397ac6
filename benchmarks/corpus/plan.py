"""Draw one case from a seed: layout, job shape, variants and the fault, checked by simulation.

The program shape (``megatron`` or ``fsdp``) comes from its own generator
(``shapes.draw_shape``); everything else random from
``random.Random(f"{kind}-{family}-{seed}")``, so a (kind, family, seed) triple
always gives the same case, and a Megatron one the case it gave before the
fsdp shape existed. A drawn fault is kept
only if the simulated run neither aborts (gloo ends a process that receives
more bytes than it expects) nor hides the fault from every dump; otherwise the
next draw is tried.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field, replace
from typing import Any

from benchmarks.corpus import fsdp, job, shapes
from benchmarks.corpus.comm import BRANCHES, SAME_WIDTH, Fault
from benchmarks.corpus.families import FAMILIES
from benchmarks.corpus.observe import Observation
from benchmarks.corpus.program import Coll, Item, P2PBatch, Programs, Stall, occurrences, record
from benchmarks.corpus.sim import Abort, Outcome, simulate
from benchmarks.corpus.topology import Layout, Topology

SMALL_BUFFER = 30
DEFAULT_BUFFER = 2000
# Families whose fault completes (nothing hangs): the fault entry itself must be in the dumps.
COMPLETING = ("dtype_mismatch", "dtype_mismatch_branch", "alltoall_splits")
# Families whose fault hangs or completes (a zero-element bucket completes on its own rank under gloo).
SIZES = ("size_mismatch", "size_mismatch_branch")
# The *_branch families: the wrong tensor comes from the neighbouring line of the gradient all_reduce's
# function (``job.start_grad_sync``; fsdp: ``fsdp.foreach_reduce``'s reduce_scatter), so the culprit's
# call site differs from its peers' by line only.
BRANCH_SITE = "start_grad_sync"


class PlanError(Exception):
    """No valid case could be drawn for this seed."""


@dataclass(frozen=True)
class Variants:
    fill_pg_config: bool = False  # gloo: pg_config filled with names and ranks (NCCL always fills it)
    dump_format: str = "pickle"  # or "json"
    only_active: bool = False
    buffer_size: int = DEFAULT_BUFFER
    cpp_stacks: bool = False  # gloo: TORCH_FR_CPP_STACK=1

    def names(self) -> list[str]:
        out = []
        if self.fill_pg_config:
            out.append("pg_config")
        if self.dump_format == "json":
            out.append("json")
        if self.only_active:
            out.append("only_active")
        if self.buffer_size != DEFAULT_BUFFER:
            out.append("small_buffer")
        if self.cpp_stacks:
            out.append("cpp_stacks")
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "fill_pg_config": self.fill_pg_config,
            "dump_format": self.dump_format,
            "only_active": self.only_active,
            "buffer_size": self.buffer_size,
            "cpp_stacks": self.cpp_stacks,
        }


@dataclass
class CasePlan:
    kind: str
    family: str
    seed: int
    layout: Layout
    cfg: shapes.Config
    variants: Variants
    faults: tuple[Fault, ...]
    programs: Programs
    outcome: Outcome
    diverged: list[dict[str, Any]] = field(default_factory=list)
    sentences: list[str] = field(default_factory=list)
    attempts: int = 1

    @property
    def topo(self) -> Topology:
        return self.programs.topo

    @property
    def shape(self) -> str:
        return self.layout.shape

    @property
    def injected_ranks(self) -> list[int]:
        return sorted({f.rank for f in self.faults})

    @property
    def no_dump(self) -> list[int]:
        return sorted(f.rank for f in self.faults if f.action == "crash")


# --------------------------------------------------------------------------- #
# Drawing
# --------------------------------------------------------------------------- #


def _draw_layout(rng: random.Random, kind: str, family: str) -> Layout:
    if kind == "gloo":
        tps, pps, dps, lo, hi = (1, 2, 4), (1, 2, 4), (1, 2, 4), 2, 32
    else:
        tps, pps, dps, lo, hi = (1, 2, 4, 8), (1, 2, 4), (1, 2, 4, 8), 8, 64
    if family == "two_culprits":
        lo = max(lo, 4)
    while True:
        tp, pp, dp = rng.choice(tps), rng.choice(pps), rng.choice(dps)
        world = tp * pp * dp
        if not lo <= world <= hi:
            continue
        if family == "p2p_unposted" and pp < 2:
            continue
        # Real runs fork every rank on this machine: keep most of them small.
        if kind == "gloo" and world > 16 and rng.random() < 0.6:
            continue
        moe = family == "alltoall_splits" or rng.random() < 0.2
        ep = 1
        if moe and tp * dp >= 2:
            ep = rng.choice([e for e in (2, 4) if (tp * dp) % e == 0])
        if family == "alltoall_splits" and ep < 2:
            continue
        return Layout(tp, pp, dp, ep)


def _draw_config(rng: random.Random, layout: Layout, kind: str) -> job.JobConfig:
    big = kind == "gloo" and layout.world_size >= 16
    seq = rng.choice([s for s in (16, 32, 64) if s % layout.tp == 0])
    buckets = tuple(
        (rng.choice((512, 1024, 2048, 4096, 8192, 16384)), rng.choice(("float32", "bfloat16")))
        for _ in range(rng.randint(1, 3))
    )
    return job.JobConfig(
        steps=rng.randint(3, 4 if big else 6),
        microbatches=rng.randint(1, 2 if big else 4),
        layers=1 if big or layout.ep > 1 else rng.randint(1, 2),
        seq=seq,
        hidden=rng.choice((32, 64, 128)),
        act_dtype=rng.choice(("bfloat16", "float32")),
        vocab=rng.choice((128, 256, 512)),
        buckets=buckets,
        checkpoint_every=rng.choice((0, 0, 2, 3)),
        routing_seed=rng.randrange(1 << 30),
    )


def _draw_fsdp_layout(rng: random.Random, kind: str, family: str) -> Layout:
    """World, hybrid replicas, expert parallel; sometimes sharded over the default group itself."""
    worlds = (2, 4, 4, 8, 8, 16) if kind == "gloo" else (4, 8, 16, 32, 64)
    while True:
        world = rng.choice(worlds)
        if family == "two_culprits" and world < 4:
            continue
        replicate = rng.choice([r for r in (1, 1, 2, 4) if world // r >= 2])
        shard = world // replicate
        ep = rng.choice([e for e in (2, 4, 8) if shard % e == 0])
        on_world = replicate == 1 and rng.random() < 0.5
        return Layout(1, 1, world, ep, shape="fsdp", replicate=replicate, shard_on_world=on_world)


def _draw_fsdp_config(rng: random.Random, layout: Layout, kind: str) -> fsdp.FsdpConfig:
    big = kind == "gloo" and layout.world_size >= 16
    layers = rng.randint(1, 2 if big else 3)
    param_dtype = rng.choice(("bfloat16", "float32"))
    return fsdp.FsdpConfig(
        steps=rng.randint(3, 4 if big else 6),
        microbatches=rng.randint(1, 2),
        layers=layers,
        dense_layers=rng.randint(0, layers - 1),
        seq=rng.choice((16, 32, 64)),
        hidden=rng.choice((16, 32, 64)),
        vocab=rng.choice((128, 256)),
        param_dtype=param_dtype,
        reduce_dtype=rng.choice(("float32", param_dtype)),
        experts_per_rank=rng.choice((1, 2)),
        reshard_after_forward=rng.random() < 0.8,
        checkpoint_every=rng.choice((0, 0, 2, 3)),
        routing_seed=rng.randrange(1 << 30),
    )


def _draw_variants(rng: random.Random, kind: str, layout: Layout) -> Variants:
    if kind == "gloo":
        return Variants(
            fill_pg_config=rng.random() < 0.5,
            dump_format="json" if rng.random() < 0.15 else "pickle",
            only_active=rng.random() < 0.15,
            buffer_size=SMALL_BUFFER if rng.random() < 0.15 else DEFAULT_BUFFER,
            cpp_stacks=layout.world_size <= 8 and rng.random() < 0.12,
        )
    return Variants(
        fill_pg_config=True,
        dump_format="json" if rng.random() < 0.15 else "pickle",
        only_active=rng.random() < 0.15,
        buffer_size=SMALL_BUFFER if rng.random() < 0.15 else DEFAULT_BUFFER,
    )


def _group_size(item: Item) -> int:
    if isinstance(item, Coll):
        return len(item.group.ranks)
    return 0


def _all_reduces(real: list[tuple[str, int, Item]], family: str, layout: Layout) -> list[tuple[str, int, Item]]:
    """The all_reduces over two or more ranks a size or dtype fault can hit; for the *_branch families
    the gradient reductions of the branch site only (the job has the other branch there: Megatron's
    bucket all_reduces, fsdp's reduce_scatters)."""
    site, ops = shapes.branch_site(layout)
    branch = family.endswith("_branch")
    return [
        c
        for c in real
        if isinstance(c[2], Coll)
        and c[2].op in (ops if branch else ("all_reduce",))
        and _group_size(c[2]) >= 2
        and (not branch or c[0] == site)
    ]


def _pick_fault(
    rng: random.Random,
    family: str,
    kind: str,
    topo: Topology,
    cfg: shapes.Config,
    rank: int | None = None,
    step: int | None = None,
) -> list[Fault]:
    """One family's fault(s) at a random rank, step, phase and site; [] if none fits this draw."""
    world = topo.layout.world_size
    steps = cfg.steps
    if family == "healthy":
        return []
    if family == "two_culprits":
        # Both in the same step, in different pipeline chains' data-parallel replicas where the
        # layout has them: a stuck rank blocks its chain, whose other ranks would otherwise
        # look stuck inside the second culprit's groups.
        first = _pick_fault(rng, "stuck_compute", kind, topo, cfg)
        if not first:
            return []
        lay = topo.layout
        d1 = lay.coords(first[0].rank)[1]
        own_tp = topo.group("tp", first[0].rank)
        others = [
            r
            for r in range(world)
            if r != first[0].rank
            and (own_tp is None or r not in own_tp.ranks)
            and (lay.dp == 1 or lay.coords(r)[1] != d1)
        ]
        for _ in range(10):
            if not others:
                return []
            second = _pick_fault(rng, "stuck_compute", kind, topo, cfg, rank=rng.choice(others), step=first[0].step)
            if second:
                return first + second
        return []
    if rank is None:
        rank = rng.randrange(world)
    if step is not None:
        pass
    elif family in COMPLETING or family in SIZES:
        step = rng.randint(1, steps - 1)
    elif family in ("skip_collective", "extra_collective", "op_mismatch", "p2p_unposted"):
        step = rng.randint(1, steps - 2)
    else:
        step = rng.randint(1, steps - 1)
    occ = occurrences(topo, cfg, rank, step)
    mod = shapes.module_of(topo.layout)

    def phase(site: str) -> str:
        if site.startswith("extra:"):
            return {"after_backward": "backward", "before_grad_norm": "optimizer", "after_step": "between"}[site[6:]]
        return mod.PHASES[site]

    def choose(cands: list[tuple[str, int, Item]]) -> tuple[str, int, Item] | None:
        if not cands:
            return None
        phases = sorted({phase(s) for s, _, _ in cands})
        want = rng.choice(phases)
        return rng.choice([c for c in cands if phase(c[0]) == want])

    real = [c for c in occ if not c[0].startswith("extra:")]
    if family in ("stuck_compute", "crash_no_dump"):
        got = choose(real)
        if got is None:
            return []
        site, index, _ = got
        if family == "stuck_compute":
            return [Fault(rank, "stuck", step, site, index)]
        mode = "exit" if kind == "gloo" and rng.random() < 0.4 else "hang"
        return [Fault(rank, "crash", step, site, index, mode)]
    if family == "skip_collective":
        got = choose([c for c in real if _group_size(c[2]) >= 2])
        return [] if got is None else [Fault(rank, "skip", step, got[0], got[1])]
    if family == "extra_collective":
        cands = []
        for site, index, _ in occ:
            if not site.startswith("extra:"):
                continue
            kind_ = mod.EXTRA_POINTS[site[6:]]
            group = topo.group(kind_, rank)
            if group is not None and len(group.ranks) >= 2:
                cands.append((site, index, kind_))
        if not cands:
            return []
        site, index, kind_ = rng.choice(cands)
        return [Fault(rank, "extra", step, site, index, kind_)]
    if family == "op_mismatch":
        got = choose(
            [
                c
                for c in real
                if isinstance(c[2], Coll) and c[2].op in ("all_reduce", "broadcast") and _group_size(c[2]) >= 2
            ]
        )
        if got is None:
            return []
        assert isinstance(got[2], Coll)
        return [Fault(rank, "op", step, got[0], got[1], "broadcast" if got[2].op == "all_reduce" else "all_reduce")]
    if family in SIZES or family in ("dtype_mismatch", "dtype_mismatch_branch"):
        return _tensor_fault(
            rng, family, kind, topo.layout, _all_reduces(real, family, topo.layout), choose, rank, step
        )
    if family == "alltoall_splits":
        dispatch = shapes.dispatch_site(topo.layout)
        cands = [c for c in real if c[0] == dispatch and isinstance(c[2], Coll) and len(c[2].in_spec.shape) == 2]
        if not cands:
            return []
        site, index, item = rng.choice(cands)
        assert isinstance(item, Coll)
        me = item.group.group_rank(rank)
        peer = rng.choice([i for i in range(len(item.group.ranks)) if i != me])
        return [Fault(rank, "a2a", step, site, index, str(peer))]
    if family == "p2p_unposted":
        cands = [c for c in real if isinstance(c[2], P2PBatch)]
        got = choose(cands)
        if got is None:
            return []
        site, index, item = got
        assert isinstance(item, P2PBatch)
        return [Fault(rank, "p2p_skip", step, site, index, rng.choice(sorted({op.kind for op in item.ops})))]
    raise ValueError(f"unknown family {family!r}")


def _tensor_fault(
    rng: random.Random,
    family: str,
    kind: str,
    layout: Layout,
    cands: list[tuple[str, int, Item]],
    choose: Any,
    rank: int,
    step: int,
) -> list[Fault]:
    """A size or dtype fault (``*_branch`` too) at one of ``cands``; [] if none fits."""
    if family in SIZES:
        action = "size" if family == "size_mismatch" else "size_branch"
        got = choose(cands)
        if got is None:
            return []
        how = rng.choice(("zero", "reshape"))
        if kind == "gloo" and isinstance(got[2], Coll) and got[2].op == "reduce_scatter":
            how = "zero"  # gloo checks a reduce_scatter's shapes and aborts on a reshaped input
        return [Fault(rank, action, step, got[0], got[1], how)]
    action = "dtype" if family == "dtype_mismatch" else "dtype_branch"
    got = choose([c for c in cands if c[2].in_spec.dtype in SAME_WIDTH])  # type: ignore[union-attr]
    if got is None:
        return []
    assert isinstance(got[2], Coll)
    return [Fault(rank, action, step, got[0], got[1], SAME_WIDTH[got[2].in_spec.dtype])]


# --------------------------------------------------------------------------- #
# What the fault is, where it diverges, and whether a dump can show it
# --------------------------------------------------------------------------- #


def _healthy_item(topo: Topology, cfg: shapes.Config, f: Fault) -> Item | None:
    for site, index, item in occurrences(topo, cfg, f.rank, f.step):
        if site == f.site and index == f.index:
            return item
    return None


def _first_unissued(healthy: list[Item], faulty: list[Item]) -> Coll | None:
    """The culprit's first collective it never issued (its healthy program, past what it did issue)."""
    done = sum(1 for i in faulty if isinstance(i, Coll))
    colls = [i for i in healthy if isinstance(i, Coll)]
    return colls[done] if done < len(colls) else None


def _where(c: Coll) -> dict[str, Any]:
    return {"pg_name": c.group.name, "group_desc": c.group.desc, "seq": c.seq, "op": c.op, "site": c.site}


def _divergence(plan_topo: Topology, cfg: shapes.Config, f: Fault, healthy: Programs, faulty: Programs) -> dict:
    """Where rank ``f.rank``'s record first differs from what its peers expect."""
    base = {"rank": f.rank}
    if f.action in ("stuck", "crash"):
        c = _first_unissued(healthy.items[f.rank], faulty.items[f.rank])
        return {**base, **(_where(c) if c else {}), "what": "first collective it never issued"}
    if f.action == "extra":
        extra = next(i for i in faulty.items[f.rank] if isinstance(i, Coll) and i.site == "log_debug_metric")
        return {**base, **_where(extra), "what": "the extra collective"}
    item = _healthy_item(plan_topo, cfg, f)
    if f.action == "p2p_skip":
        assert isinstance(item, P2PBatch)
        op = next(o for o in item.ops if o.kind == f.arg)
        return {
            **base,
            "pg_name": op.group.name,
            "group_desc": op.group.desc,
            "seq": None,
            "op": f.arg,
            "peer": op.peer,
            "p2p_seq": op.p2p_seq,
            "site": f.site,
            "what": f"the {f.arg} it never posted",
        }
    assert isinstance(item, Coll)
    what = {
        "skip": "the collective it skipped",
        "op": "the collective where it called another op",
        "size": "the collective with the other size",
        "dtype": "the collective with the other dtype",
        "size_branch": "the collective with the other size, from the neighbouring line",
        "dtype_branch": "the collective with the other dtype, from the neighbouring line",
        "a2a": "the all_to_all whose output splits are off by one",
    }[f.action]
    return {**base, **_where(item), "what": what}


def _sentence(f: Fault, d: dict[str, Any], phases: dict[str, str] = job.PHASES) -> str:
    at = f"step {f.step}, {phases.get(f.site, 'between')} phase"
    where = f"{d.get('op')} on {d.get('group_desc')} (group {d.get('pg_name')}) seq {d.get('seq')}"
    if f.action == "stuck":
        return f"Rank {f.rank} sleeps (stuck in compute) before {f.site} at {at}; the first collective it never issues is {where}."
    if f.action == "crash":
        how = "exits" if f.arg == "exit" else "hangs"
        return f"Rank {f.rank} {how} before {f.site} at {at} and writes no dump; it never issues {where}."
    if f.action == "skip":
        return f"Rank {f.rank} skips the {where} ({f.site}) at {at} and goes on."
    if f.action == "extra":
        return f"Rank {f.rank} issues one extra all_reduce of a [1] float debug metric ({where}) from log_debug_metric at step {f.step}."
    if f.action == "op":
        return f"Rank {f.rank} calls {f.arg} where its peers call the {where} ({f.site}) at {at}."
    branch = f", from the neighbouring line of {f.site} (another branch)" if f.action in BRANCHES else ""
    if f.action in ("size", "size_branch"):
        what = "a zero-element tensor" if f.arg == "zero" else "the same elements in another shape"
        return f"Rank {f.rank} passes {what} to the {where} ({f.site}) at {at}{branch}."
    if f.action in ("dtype", "dtype_branch"):
        return (
            f"Rank {f.rank} passes {f.arg} to the {where} ({f.site}) at {at}{branch}; "
            "the width is the same, so it completes."
        )
    if f.action == "a2a":
        return (
            f"Rank {f.rank}'s output splits of the {where} ({f.site}) at {at} expect one row more from its "
            f"expert-parallel peer (group rank {f.arg}) than that peer sends."
        )
    if f.action == "p2p_skip":
        return f"Rank {f.rank} never posts its {f.arg} {'to' if f.arg == 'send' else 'from'} rank {d.get('peer')} in {f.site} at {at} (pipeline send/recv)."
    return f"Rank {f.rank}: {f.action} at {f.site} ({at})."


def observation_from_sim(
    plan_topo: Topology, outcome: Outcome, no_dump: list[int], buffer_size: int | None = None
) -> Observation:
    """What the simulated run shows; with ``buffer_size``, only what the ring buffer keeps.

    gloo records no send/recv, so its ring holds collectives only.
    """
    world = plan_topo.layout.world_size
    issued: dict[int, dict[str, int]] = {}
    pending: dict[int, list[dict[str, Any]]] = {}
    present: dict[int, set[tuple[str, int]]] = {}
    in_p2p = set()
    for r in range(world):
        last: dict[str, int] = {}
        pend = []
        held = set()
        recorded = [e for e in outcome.entries[r] if outcome.mode == "nccl" or isinstance(e.op, Coll)]
        kept = {id(e) for e in recorded[-buffer_size:]} if buffer_size else {id(e) for e in recorded}
        for e in outcome.entries[r]:
            if isinstance(e.op, Coll):
                last[e.op.group.name] = max(last.get(e.op.group.name, 0), e.op.seq)
                if id(e) not in kept:
                    continue
                held.add((e.op.group.name, e.op.seq))
                if e.state != "completed" and r not in no_dump:
                    pend.append(
                        {
                            "pg_name": e.op.group.name,
                            "pg_desc": e.op.group.desc,
                            "seq": e.op.seq,
                            "op": e.op.op,
                            "input_sizes": [list(e.op.in_spec.shape)],
                            "input_dtypes": [e.op.in_spec.dtype],
                            "ranks": e.op.group.ranks,
                            "state": e.state if outcome.mode == "nccl" else None,
                        }
                    )
        issued[r] = last
        pending[r] = pend
        present[r] = held
        if (
            outcome.mode == "gloo"
            and outcome.final[r] == "blocked"
            and "not recorded by gloo" in outcome.waiting.get(r, "")
        ):
            in_p2p.add(r)
    return Observation(
        world=world,
        dumps_missing=sorted(no_dump),
        states=dict(outcome.final),
        waiting=dict(outcome.waiting),
        in_p2p=in_p2p,
        issued=issued,
        pending=pending,
        entries={r: len(outcome.entries[r]) for r in range(world) if r not in no_dump},
        present=present,
    )


def culprits_and_visibility(
    kind: str,
    family: str,
    faults: tuple[Fault, ...],
    diverged: list[dict[str, Any]],
    obs: Observation,
    topo: Topology,
    lists_members: bool = True,
) -> tuple[list[int], str | None]:
    """(the ranks a correct diagnosis names, why the case cannot be graded fairly, or None).

    The culprits are the injected ranks, except gloo ``p2p_unposted``, where the
    unposted op is invisible: there they are the ranks the dumps single out
    (``Observation.singled_out``). A case is not gradable when the dumps cannot
    show its fault, or when they single out ranks that are not culprits (a rank
    blocked in an unrecorded send/recv that looks exactly like a stuck one), or when they
    cannot tell the fault from another: a gloo skipper that recorded nothing after the
    skip ends its record where a stuck rank would; a rank that died without a dump, above
    every dumped rank, with no dump waiting and no pg_config listing members
    (``lists_members`` False), leaves no sign that it existed.
    """
    injected = sorted({f.rank for f in faults})

    def tp_group(r: int) -> tuple[int, ...]:
        g = topo.group("tp", r)
        return g.ranks if g is not None else (r,)

    singled = obs.singled_out(tp_group)
    any_pending = any(obs.pending.get(r) for r in range(obs.world))
    if family == "healthy":
        bad = {r: s for r, s in obs.states.items() if s != "done"}
        return [], (f"ranks not done: {bad}" if bad else None)
    if family == "p2p_unposted" and kind == "gloo":
        if not singled:
            return [], "no rank is singled out: the blocked send/recv leaves no trace"
        return singled, None
    extra = sorted(set(singled) - set(injected))
    if family == "crash_no_dump":
        # A gloo peer of a dead process gets a connection error: its op ends (retired) and the
        # rank stops. Ranks that share a group with a rank without a dump are explained by it.
        dead = set(obs.dumps_missing)
        extra = [r for r in extra if not any(dead & set(g.ranks) for g in topo.member_groups(r) if g.kind != "default")]
    if extra:
        return injected, f"the dumps also single out rank(s) {extra}, which look exactly like a stuck rank"
    if family == "crash_no_dump":
        if not any_pending and not lists_members and _dead_unseen(obs):
            return injected, "no dumped rank waits on anything, and no dump shows that the dead rank exists"
        return injected, None
    if family == "skip_collective" and kind == "gloo":
        level = [r for r in injected if obs.silent(r) and not _ahead_anywhere(obs, topo, r)]
        if level:
            return injected, (
                f"rank(s) {level} recorded nothing after the skip (blocked in a send/recv gloo does not "
                "record): the record ends where a stuck rank's would, so a skip cannot be told from a stall"
            )
    if family in ("stuck_compute", "two_culprits"):
        hidden = [r for r in injected if r not in singled]
        if hidden:
            return injected, f"rank(s) {hidden} are not singled out by the dumps"
        return injected, None
    if family in COMPLETING or (family in SIZES and not any_pending):
        d = diverged[0]
        key = (d["pg_name"], d["seq"])
        culprit = injected[0]
        if key not in obs.present.get(culprit, set()):
            return injected, f"the culprit's fault entry {key} is not in its dump"
        peers = [r for r in obs.present if r != culprit and key in obs.present[r]]
        if not peers:
            return injected, f"no peer's dump holds the fault entry {key}"
        return injected, None
    if not any_pending:
        return injected, "no dumped rank has a pending entry"
    return injected, None


def _draw_job(rng: random.Random, kind: str, family: str, shape: str) -> tuple[Layout, shapes.Config]:
    if shape == "fsdp":
        layout = _draw_fsdp_layout(rng, kind, family)
        return layout, _draw_fsdp_config(rng, layout, kind)
    layout = _draw_layout(rng, kind, family)
    return layout, _draw_config(rng, layout, kind)


def draw(kind: str, family: str, seed: int, max_attempts: int = 60, shape: str | None = None) -> CasePlan:
    """The case for (kind, family, seed); raises PlanError if no valid draw is found.

    ``shape`` forces the program shape (default: ``shapes.draw_shape``'s).
    """
    if family not in FAMILIES or kind not in FAMILIES[family].kinds:
        raise PlanError(f"no {kind} cases for family {family!r}")
    shape = shape or shapes.draw_shape(kind, family, seed)
    if shape not in FAMILIES[family].shapes:
        raise PlanError(f"no {shape} cases for family {family!r}")
    rng = random.Random(f"{kind}-{family}-{seed}")
    reasons: list[str] = []
    for attempt in range(1, max_attempts + 1):
        layout, cfg = _draw_job(rng, kind, family, shape)
        topo = Topology(layout)
        variants = _draw_variants(rng, kind, layout)
        if kind == "nccl" and family in COMPLETING + SIZES and variants.only_active:
            # onlyActive drops completed entries, and with them a fault that completes
            variants = replace(variants, only_active=False)
        faults = tuple(_pick_fault(rng, family, kind, topo, cfg))
        if family != "healthy" and not faults:
            reasons.append("no site for the fault")
            continue
        programs = record(topo, cfg, faults)
        try:
            outcome = simulate(programs, kind)
        except Abort as exc:
            reasons.append(f"gloo would abort: {exc}")
            continue
        healthy = record(topo, cfg) if faults else programs
        diverged = [_divergence(topo, cfg, f, healthy, programs) for f in faults]
        no_dump = sorted(f.rank for f in faults if f.action == "crash")
        obs = observation_from_sim(topo, outcome, no_dump, variants.buffer_size)
        _, hidden = culprits_and_visibility(kind, family, faults, diverged, obs, topo)
        if hidden is not None:
            reasons.append(hidden)
            continue
        return CasePlan(
            kind=kind,
            family=family,
            seed=seed,
            layout=layout,
            cfg=cfg,
            variants=variants,
            faults=faults,
            programs=programs,
            outcome=outcome,
            diverged=diverged,
            sentences=[_sentence(f, d, shapes.module_of(layout).PHASES) for f, d in zip(faults, diverged, strict=True)]
            or ["No fault injected."],
            attempts=attempt,
        )
    raise PlanError(f"no valid {kind} {family} case for seed {seed}: " + "; ".join(sorted(set(reasons))[:5]))


def stall_of(plan: CasePlan, rank: int) -> Stall | None:
    return plan.outcome.stalled_at.get(rank)


def _ahead_anywhere(obs: Observation, topo: Topology, rank: int) -> bool:
    """``rank`` issued, in some group, a collective none of its peers there issued."""
    mine = obs.issued.get(rank, {})
    for g in topo.member_groups(rank):
        peers = [r for r in g.ranks if r != rank and r not in obs.dumps_missing]
        if peers and mine.get(g.name, 0) > max(obs.issued.get(r, {}).get(g.name, 0) for r in peers):
            return True
    return False


def _dead_unseen(obs: Observation) -> bool:
    """Every dead rank is above every dumped rank: with a stock pg_config nothing names it."""
    dumped = [r for r in range(obs.world) if r not in obs.dumps_missing]
    return bool(dumped) and min(obs.dumps_missing) > max(dumped)
