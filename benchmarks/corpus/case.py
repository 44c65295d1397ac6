"""One corpus case: plan it, make its dumps (real gloo run or NCCL-shaped), write ``truth.json``."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from benchmarks.corpus import gloo, nccl
from benchmarks.corpus.families import FAMILIES
from benchmarks.corpus.observe import Observation, pending_of, read_dump
from benchmarks.corpus.plan import CasePlan, culprits_and_visibility, draw, observation_from_sim
from sample_dumps.generate import RunResult, dump_file_name

SCHEMA = "flightdeck.corpus/1"
TRUTH_FILE = "truth.json"


class CaseSkipped(Exception):
    """The case could not be generated, or its dumps cannot show its fault; it is neither a pass nor a miss."""


def _torch_version() -> str | None:
    try:
        import torch

        return str(torch.__version__)
    except ImportError:
        return None


def _observe_files(plan: CasePlan, out_dir: Path, names: dict[int, str], base: Observation) -> Observation:
    """``base`` with what the written dumps hold (pending entries, (group, seq) present, entry counts)."""
    ranks_of = {g.name: g.ranks for g in plan.topo.groups}
    pending: dict[int, list[dict[str, Any]]] = {}
    present: dict[int, set] = {}
    entries: dict[int, int] = {}
    missing = []
    for r in range(plan.layout.world_size):
        path = out_dir / names[r]
        if not path.exists():
            missing.append(r)
            continue
        dump = read_dump(path)
        pending[r], present[r] = pending_of(dump, ranks_of)
        entries[r] = len(dump.get("entries", []))
    base.dumps_missing = missing
    base.pending, base.present, base.entries = pending, present, entries
    return base


def _observe_gloo(plan: CasePlan, out_dir: Path, run: RunResult) -> Observation:
    sim_obs = observation_from_sim(plan.topo, plan.outcome, plan.no_dump)
    issued = {}
    for r in range(plan.layout.world_size):
        s = run.summaries.get(str(r))
        issued[r] = {str(k): int(v) for k, v in s["issued"].items()} if s and "issued" in s else sim_obs.issued[r]
    obs = Observation(
        world=plan.layout.world_size,
        dumps_missing=[],
        states=dict(run.states),
        waiting=dict(run.details),
        in_p2p={r for r, w in run.details.items() if run.states.get(r) == "blocked" and "not recorded by gloo" in w},
        issued=issued,
    )
    names = {
        r: dump_file_name({"dump_format": plan.variants.dump_format, "file_prefix": gloo.FILE_PREFIX}, r)
        for r in issued
    }
    return _observe_files(plan, out_dir, names, obs)


def _notes(plan: CasePlan, culprits: list[int], obs: Observation) -> tuple[list[str], list[str]]:
    """(what the dumps show, what they cannot show), in plain sentences."""
    shows: list[str] = []
    cannot: list[str] = []
    v = plan.variants
    if plan.kind == "gloo":
        cannot.append("gloo records no send/recv: pipeline waits leave no entry")
        shows.append("every gloo entry stays state 'scheduled'; 'retired' says whether it completed")
        if not v.fill_pg_config:
            cannot.append("pg_config is the stock gloo one (no names, no ranks): membership must be inferred")
        if v.only_active:
            shows.append(
                "onlyActive=True keeps every gloo entry: gloo never sets a discovered completion time, "
                "which is what onlyActive filters on"
            )
        if v.cpp_stacks:
            shows.append("TORCH_FR_CPP_STACK=1: stacks hold C++ frames between the Python ones")
    else:
        shows.append("send/recv are recorded; states are scheduled / started / completed")
        if v.only_active:
            cannot.append("onlyActive=True: completed entries are left out (pg_status keeps the last seqs)")
    if v.dump_format == "json":
        cannot.append("JSON dumps carry no call stacks")
    if v.buffer_size < 2000:
        cannot.append(f"the ring buffer holds only the last {v.buffer_size} entries per rank")
    if obs.dumps_missing:
        shows.append(f"no dump from rank(s) {obs.dumps_missing}")
    if plan.family == "alltoall_splits":
        cannot.append(
            "all_to_all split sizes are not recorded: the off-by-one shows only as one more output row "
            "on the culprit at that seq; nothing hangs"
        )
    if plan.family == "p2p_unposted" and plan.kind == "gloo":
        cannot.append(
            f"the unposted {plan.faults[0].arg} of rank {plan.faults[0].rank} is invisible (gloo); the dumps show "
            f"rank(s) {culprits} blocked outside any recorded collective where a peer waits for them"
        )
    if any(f.action == "crash" and f.arg == "exit" for f in plan.faults):
        shows.append(
            "the culprit's process exited: gloo peers that shared a group with it got connection errors, "
            "their op ended (retired) and they stopped"
        )
    victims = [r for r in sorted(obs.in_p2p) if r not in culprits]
    if victims:
        shows.append(f"rank(s) {victims} are blocked in a send/recv (victims): nothing pending in their dumps")
    return shows, cannot


def generate_case(kind: str, family: str, seed: int, out_dir: str | Path, shape: str | None = None) -> dict[str, Any]:
    """Make the case (kind, family, seed) in ``out_dir``: its dumps and ``truth.json``; returns the truth.

    ``shape`` (``megatron`` or ``fsdp``) forces the program shape; by default the seed draws it.
    Raises CaseSkipped when it cannot be made or its dumps cannot show the fault.
    """
    from benchmarks.corpus.plan import PlanError

    t0 = time.time()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / TRUTH_FILE).unlink(missing_ok=True)
    try:
        plan = draw(kind, family, seed, shape=shape)
    except PlanError as exc:
        raise CaseSkipped(str(exc)) from exc
    sim_obs = observation_from_sim(plan.topo, plan.outcome, plan.no_dump)
    agrees: dict[str, Any] = {"agrees": True}
    if kind == "gloo":
        try:
            run = gloo.run_case(plan, out)
        except RuntimeError as exc:
            raise CaseSkipped(f"run failed: {str(exc)[:2000]}") from exc
        obs = _observe_gloo(plan, out, run)
        diff = {
            str(r): {"real": [obs.states.get(r), obs.waiting.get(r)], "simulated": [s, sim_obs.waiting.get(r)]}
            for r, s in sim_obs.states.items()
            if (s, sim_obs.waiting.get(r)) != (obs.states.get(r), obs.waiting.get(r))
        }
        agrees = {"agrees": not diff, "differences": diff} if diff else agrees
        file_prefix = gloo.FILE_PREFIX
    else:
        nccl.write_dumps(plan, out)
        names = {r: nccl.file_name(plan, r) for r in range(plan.layout.world_size)}
        obs = _observe_files(plan, out, names, sim_obs)
        file_prefix = nccl.FILE_PREFIX
    lists_members = kind == "nccl" or plan.variants.fill_pg_config
    culprits, hidden = culprits_and_visibility(kind, family, plan.faults, plan.diverged, obs, plan.topo, lists_members)
    if hidden is not None:
        raise CaseSkipped(f"the dumps cannot show the fault: {hidden}")
    fam = FAMILIES[family]
    shows, cannot = _notes(plan, culprits, obs)
    truth = {
        "schema": SCHEMA,
        "kind": kind,
        "family": family,
        "seed": seed,
        "shape": plan.shape,
        "variants": plan.variants.names(),
        "variant_settings": plan.variants.to_dict(),
        "layout": plan.layout.to_dict(),
        "job": plan.cfg.to_dict(),
        "file_prefix": file_prefix,
        "injected": [
            {**f.to_dict(), "sentence": s, "diverged_at": d}
            for f, s, d in zip(plan.faults, plan.sentences, plan.diverged, strict=False)
        ],
        "injected_ranks": plan.injected_ranks,
        "culprit_ranks": culprits,
        "accepted_classes": list(fam.accepted),
        "grading": fam.grading,
        "diverged_at": plan.diverged,
        "fault": " ".join(plan.sentences),
        "expected": {"failure_class": fam.accepted[0], "suspect_ranks": culprits},
        "observed": obs.to_dict(),
        "dumps_show": shows,
        "dumps_cannot_show": cannot,
        "simulation": agrees,
        "groups": [{"name": g.name, "desc": g.desc, "ranks": list(g.ranks)} for g in plan.topo.groups],
        "plan_attempts": plan.attempts,
        "torch_version": _torch_version() if kind == "gloo" else None,
        "generation_seconds": round(time.time() - t0, 2),
    }
    (out / TRUTH_FILE).write_text(json.dumps(truth, indent=1) + "\n")
    return truth
