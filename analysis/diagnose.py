"""From loaded dumps to a Report: groups -> progress -> mismatches -> wait graph -> verdict."""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from . import schema as s
from .cells import build_cells, created_ns
from .groups import GroupIndex, ProcessGroup, build_groups
from .hang import HangExplainer, group_label, ranks_text
from .load import DumpSet
from .mismatch import Mismatch, find_mismatches
from .order import ProgramOrder
from .parse import peer_ranks
from .progress import Progress, compute_progress
from .report import Report, Wavefront
from .rowindex import RankRows
from .rowkeys import equals, flag
from .waitfor import WaitGraph, build_wait_graph, reaches

_CLASS_PRIORITY = (
    "desync",
    "size_mismatch",
    "dtype_mismatch",
    "missing_dump",
    "missing_participant",
    "p2p_unmatched",
    "stalled_in_flight",
)


_NEVER = 2**63


@dataclass(slots=True)
class Analysis:
    """Intermediate results, kept for views (dashboard, grid) that need more than the verdict."""

    dumps: DumpSet
    groups: GroupIndex
    progress: dict[tuple[str, int], Progress]
    cells: pd.DataFrame
    mismatches: list[Mismatch]
    graph: WaitGraph
    missing_dumps: list[int]
    _rank_rows: dict[str, RankRows] = field(default_factory=dict, repr=False)

    def rank_rows(self, table: str, rank: int) -> np.ndarray:
        """Positions of ``rank``'s rows in ``cells`` or the dumps' ``entries`` (built on first use)."""
        if table not in self._rank_rows:
            frame = self.cells if table == "cells" else self.dumps.entries
            self._rank_rows[table] = RankRows(frame[s.RANK].to_numpy(dtype=np.int64))
        return self._rank_rows[table].of(rank)

    @property
    def records_p2p(self) -> bool:
        """False for gloo dumps: gloo's Flight Recorder writes no send/recv entries."""
        names = self.dumps.entries[s.PROFILING_NAME]
        cats = names.cat.categories if hasattr(names, "cat") else names.unique()
        return not (len(cats) and all(str(c).startswith("gloo:") for c in cats))


def _estimate_world(index: GroupIndex, have_dump: set[int]) -> int:
    """World size: the highest rank seen, or what a partition of the world into
    same-description groups implies (gloo dumps name no members of absent ranks)."""
    world = max(have_dump, default=-1) + 1
    by_desc: dict[str, list[ProcessGroup]] = defaultdict(list)
    for g in index.groups.values():
        world = max(world, max(g.ranks, default=-1) + 1)
        if g.desc:
            by_desc[g.desc].append(g)
    for groups in by_desc.values():
        sizes = Counter(len(g.ranks) for g in groups)
        modal, _ = sizes.most_common(1)[0]
        members = [r for g in groups for r in g.ranks]
        if len(groups) > 1 and len(set(members)) == len(members):
            world = max(world, modal * len(groups))
    return world


def _complete_inferred_groups(index: GroupIndex, world: int, have_dump: set[int]) -> None:
    """Give inferred groups the members that had no dump, where that is unambiguous."""
    absent = [r for r in range(world) if r not in have_dump]
    for g in index.groups.values():
        if g.membership_source != "inferred":
            continue
        if g.desc == "default_pg" or g.name == "0":
            g.ranks = tuple(range(world))
    if not absent:
        return
    by_desc: dict[str, list[ProcessGroup]] = defaultdict(list)
    for g in index.groups.values():
        if g.membership_source == "inferred" and g.desc and g.desc != "default_pg":
            by_desc[g.desc].append(g)
    for groups in by_desc.values():
        modal = Counter(len(g.ranks) for g in groups).most_common(1)[0][0]
        short = [g for g in groups if len(g.ranks) < modal]
        taken = {r for g in groups for r in g.ranks}
        free = [r for r in absent if r not in taken]
        if len(short) == 1 and len(free) == modal - len(short[0].ranks):
            short[0].ranks = tuple(sorted((*short[0].ranks, *free)))


def _p2p_pending(dumps: DumpSet, index: GroupIndex) -> pd.DataFrame:
    e = dumps.entries
    mask = flag(e[s.IS_P2P]) & ~(equals(e[s.STATE], "completed") | flag(e[s.RETIRED]))
    p = e.loc[mask, [s.RANK, s.PG_NAME, s.OP, s.PROFILING_NAME, s.P2P_SEQ]].copy()
    p[s.PEER_SRC], p[s.PEER_DST] = peer_ranks(p[s.PROFILING_NAME])
    p[s.PG_KEY] = [index.key_of.get((int(r), str(n)), str(n)) for r, n in zip(p[s.RANK], p[s.PG_NAME])]
    return p


def run_analysis(dumps: DumpSet) -> Analysis:
    """Everything up to (not including) the verdict."""
    index = build_groups(dumps)
    have_dump = set(dumps.ranks)
    world = _estimate_world(index, have_dump)
    _complete_inferred_groups(index, world, have_dump)
    expected = {r for g in index.groups.values() for r in g.ranks} | set(range(world))
    missing = sorted(r for r in expected if r not in have_dump)
    cells = build_cells(dumps, index)
    progress = compute_progress(dumps, index, cells)
    desc_of = {k: g.desc for k, g in index.groups.items()}
    mismatches = find_mismatches(cells, desc_of)
    pending = cells.loc[~cells["done"].to_numpy(), [s.PG_KEY, s.RANK, s.SEQ, s.OP]]
    pending_ops = {
        (k, int(r), int(q)): str(op) for k, r, q, op in pending[[s.PG_KEY, s.RANK, s.SEQ, s.OP]].itertuples(index=False)
    }
    graph = build_wait_graph(index, progress, have_dump, pending_ops, _p2p_pending(dumps, index))
    return Analysis(dumps, index, progress, cells, mismatches, graph, missing)


def _mismatch_since(a: Analysis, decisive: list[Mismatch]) -> int | None:
    """When the earliest decisive mismatch was issued (ns), if the dumps have times."""
    times = []
    c = a.cells
    for m in decisive:
        hit = created_ns(a.dumps.entries, c.loc[(c[s.PG_KEY] == m.pg_key) & (c[s.SEQ] == m.seq)]).dropna()
        if len(hit):
            times.append(int(hit.min()))
    return min(times) if times else None


def _cell_detail(a: Analysis, key: str, seq: int, rank: int) -> str:
    c = a.cells
    hit = c.loc[(c[s.PG_KEY] == key) & (c[s.SEQ] == seq) & (c[s.RANK] == rank)]
    if hit.empty:
        return ""
    row = hit.iloc[0]
    site = row[s.CALL_SITE]
    where = f", called from {site}" if isinstance(site, str) and site else ""
    return f"{row[s.OP]} {row[s.INPUT_SIZES]} {row[s.INPUT_DTYPES]}{where}"


def _mismatch_evidence(a: Analysis, m: Mismatch) -> str:
    g = a.groups.groups[m.pg_key]
    what = {s.OP: "op", s.INPUT_SIZES: "input sizes", s.INPUT_DTYPES: "dtypes", s.CALL_SITE: "call site"}[m.attribute]
    found = "; ".join(f"rank {r}: {v}" for r, v in list(m.found.items())[:8])
    basis = (
        "the sibling groups with the same description" if m.decided_by == "siblings" else "the majority of the group"
    )
    return f"At seq {m.seq} of {group_label(g)} the {what} differ: {found}, while {basis} issued {m.expected}."


def _summarize_progress(a: Analysis) -> list[dict[str, Any]]:
    out = []
    for g in a.groups.by_relevance():
        enq = {r: p.enqueued for r in g.ranks if (p := a.progress.get((g.key, r))) and p.known}
        done = {r: p.completed for r in g.ranks if (p := a.progress.get((g.key, r))) and p.completed is not None}
        top = max(enq.values(), default=None)
        lagging = sorted(r for r, v in enq.items() if top is not None and v < top)
        out.append(
            {
                "pg_key": g.key,
                "pg_name": g.name,
                "pg_desc": g.desc,
                "ranks": list(g.ranks),
                "size": len(g.ranks),
                "membership": g.membership_source,
                "enqueued_min": min(enq.values(), default=None),
                "enqueued_max": top,
                "completed_min": min(done.values(), default=None),
                "completed_max": max(done.values(), default=None),
                "lagging_ranks": lagging,
                "ranks_without_dump": [r for r in g.ranks if r in set(a.missing_dumps)],
            }
        )
    out.sort(key=lambda g: (not g["lagging_ranks"], g["enqueued_max"] is None))
    return out


def verdict(a: Analysis) -> Report:
    """Decide suspects, class, wavefront and evidence from the analysis."""
    graph = a.graph
    evidence: list[str] = []
    suspect_class: dict[int, str] = {}
    wave: tuple[str, int | None, str | None] | None = None

    # 1. Mismatches: the earliest divergence point in each group explains what follows.
    mism = sorted(a.mismatches, key=lambda m: (_CLASS_PRIORITY.index(m.failure_class), m.seq))
    first_per_group: dict[str, Mismatch] = {}
    for m in sorted(a.mismatches, key=lambda m: m.seq):
        first_per_group.setdefault(m.pg_key, m)
    decisive = [m for m in first_per_group.values() if m.expected != "no majority"]
    for m in sorted(decisive, key=lambda m: (_CLASS_PRIORITY.index(m.failure_class), m.seq)):
        evidence.append(_mismatch_evidence(a, m))
        for r in m.odd_ranks:
            suspect_class.setdefault(r, m.failure_class)
        if wave is None:
            op = a.cells.loc[(a.cells[s.PG_KEY] == m.pg_key) & (a.cells[s.SEQ] == m.seq), s.OP]
            wave = (m.pg_key, m.seq, str(op.mode().iloc[0]) if not op.empty else None)
    for m in mism:
        if m.expected == "no majority" and m.pg_key not in {d.pg_key for d in decisive}:
            evidence.append(
                _mismatch_evidence(a, m).replace(
                    "while the majority of the group issued no majority.",
                    "and no majority or sibling group decides which is right.",
                )
            )
    mismatch_groups = {m.pg_key for m in decisive}
    mismatch_members = {r for k in mismatch_groups for r in a.groups.groups[k].ranks}

    # 2. The hang: roots of the wait-for graph, explained.
    order = ProgramOrder(a.cells, a.dumps.entries, {k: g.desc for k, g in a.groups.groups.items()})
    explainer = HangExplainer(a, order, _mismatch_since(a, decisive), mismatch_members if suspect_class else set())
    findings = explainer.explain()
    unresolved_cycle = explainer.unresolved
    for f in sorted(findings, key=lambda f: (f.since, f.rank)):
        suspect_class.setdefault(f.rank, f.failure_class)
        evidence.append(f.evidence)
        if wave is None and f.pg_key is not None:
            wave = (f.pg_key, f.seq, f.op)
    evidence.extend(explainer.notes)

    # 3. Everyone issued it, nobody finished: stalled in flight.
    if not suspect_class and graph.stalled:
        (key, q), _ = max(graph.stalled.items(), key=lambda kv: len(kv[1]))
        g = a.groups.groups[key]
        op = next((b.op for b in graph.blocked if b.pg_key == key and b.seq == q), None)
        wave = (key, q, op)
        evidence.append(
            f"Every member of {group_label(g)} issued seq {q} ({op or 'collective'}) and none completed it: "
            f"the collective is stuck in flight (GPU, NCCL or network), with no rank behind on the CPU side."
        )

    for r in a.missing_dumps:
        if r not in suspect_class:
            suspect_class[r] = "missing_dump"
            evidence.append(f"Rank {r} is a member of the job's groups but wrote no dump.")

    suspects = sorted(suspect_class)
    victims = sorted(
        (reaches(graph, set(suspects)) | {b.rank for b in graph.blocked} | explainer.set_aside) - set(suspects)
    )
    classes = Counter(suspect_class.values())
    if suspects:
        failure_class = min(classes, key=lambda c: (_CLASS_PRIORITY.index(c), -classes[c]))
    elif graph.stalled:
        failure_class = "stalled_in_flight"
    else:
        failure_class = "healthy"
    hang = bool(graph.edges or graph.stragglers or graph.stalled or a.missing_dumps)
    if failure_class == "healthy":
        verdict_word = "healthy"
    elif hang:
        verdict_word = "hang"
    else:
        verdict_word = "mismatch"
    isolated = bool(suspects) and not unresolved_cycle and len(suspects) < max(len(a.dumps.ranks), 1)
    attribution = "CONTINUE" if isolated else "STOP"

    wavefront = None
    if wave is not None:
        g = a.groups.groups.get(wave[0])
        if g is not None:
            wavefront = Wavefront(g.key, g.name, g.desc, g.ranks, wave[1], wave[2])
    if victims:
        evidence.append(
            f"{len(victims)} rank(s) are blocked waiting, directly or through others: {ranks_text(victims, 24)}."
        )
    summary = _summary(verdict_word, failure_class, suspects, wavefront, len(victims), len(a.dumps.ranks))
    return Report(
        verdict=verdict_word,
        failure_class=failure_class,
        suspect_ranks=suspects,
        victim_ranks=victims,
        attribution_state=attribution,
        wavefront=wavefront,
        summary=summary,
        evidence=evidence,
        ranks_loaded=len(a.dumps.ranks),
        missing_dumps=a.missing_dumps,
        file_errors=a.dumps.file_errors,
        process_groups=_summarize_progress(a),
        suspect_classes=suspect_class,
        analysis=a,
    )


_CLASS_WORDS = {
    "missing_participant": (
        "never issued a collective its peers wait in",
        "never issued collectives their peers wait in",
    ),
    "desync": (
        "issued a different collective than its peers (CPU-side divergence)",
        "issued different collectives than their peers (CPU-side divergence)",
    ),
    "size_mismatch": (
        "passed a tensor of a different size than its peers",
        "passed tensors of different sizes than their peers",
    ),
    "dtype_mismatch": (
        "passed a tensor of a different dtype than its peers",
        "passed tensors of different dtypes than their peers",
    ),
    "p2p_unmatched": ("never posted the matching send/recv", "never posted the matching send/recv"),
    "stalled_in_flight": (
        "is stuck inside a collective its peers got through (GPU or network side)",
        "are stuck inside collectives their peers got through (GPU or network side)",
    ),
    "missing_dump": ("wrote no dump", "wrote no dumps"),
}


def _summary(
    verdict_word: str, failure_class: str, suspects: list[int], wave: Wavefront | None, n_victims: int, n_ranks: int
) -> str:
    if n_ranks == 0:
        return "No Flight Recorder dump could be read: nothing was analyzed."
    if verdict_word == "healthy":
        return "No hang and no mismatch: every rank completed what it issued, and the ranks agree."
    where = ""
    if wave is not None:
        seq = f" seq {wave.collective_seq_id}" if wave.collective_seq_id is not None else ""
        where = f" at {wave.op or 'collective'}{seq} of group {wave.pg_name} ({wave.pg_desc or 'no description'})"
    if not suspects:
        return (
            f"The job {'hangs' if verdict_word == 'hang' else 'diverged'}{where}, but no single rank can be isolated."
        )
    who = ranks_text(suspects, 12).capitalize()
    one, many = _CLASS_WORDS.get(failure_class, (failure_class, failure_class))
    words = one if len(suspects) == 1 else many
    blocked = f"; {n_victims} other rank(s) wait on {'it' if len(suspects) == 1 else 'them'}" if n_victims else ""
    return f"{who} {words}{where}{blocked}."


def analyze_dumps(dumps: DumpSet) -> Report:
    """Analyze already-loaded dumps."""
    a = run_analysis(dumps)
    report = verdict(a)
    report.tables = {
        "entries": dumps.entries,
        "stacks": dumps.stacks,
        "groups": a.groups.to_frame(),
        "pg_status": dumps.status,
        "files": dumps.files,
    }
    return report
