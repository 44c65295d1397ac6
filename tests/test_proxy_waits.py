"""NCCL proxy-op waits: simulated jobs of 8 to 1,024 ranks with a known fault, in every
format; the culprit, the link and the congested receiver named exactly, where probing's own
rules name a propagated victim."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pandas as pd
import pytest
from proxy_cases import FAULTS, case

import analysis
from analysis.api import analyze_proxy_ops
from benchmarks.proxysim.__main__ import write_job
from benchmarks.proxysim.formats import FORMATS

FAST_SIZES = (8, 64, 256)


def _answer(report: analysis.Report) -> tuple:
    pw = report.proxy_waits.waits
    return pw.finding, tuple(pw.culprit_ranks), tuple(tuple(link) for link in pw.suspect_links)


@pytest.fixture(scope="module")
def jobs(tmp_path_factory):
    """Each (size, fault) written once in every tabular format (and plugin traces at 8 ranks)."""
    made: dict[tuple[int, str], tuple[Path, object]] = {}

    def get(world: int, fault: str, formats: tuple[str, ...] = FORMATS) -> tuple[Path, object]:
        key = (world, fault)
        if key not in made:
            c = case(fault, world)
            out = tmp_path_factory.mktemp(f"w{world}-{fault}")
            fmts = (*formats, "chrome") if world <= 16 else formats
            per_process = world <= 16 or (fault.startswith("credit") and world <= 256)
            write_job(
                out, world, list(c.faults), fmts, iterations=4 if world < 1024 else 3, seed=1, per_process=per_process
            )
            made[key] = (out, c)
        return made[key]

    return get


@pytest.mark.parametrize("fault", FAULTS)
@pytest.mark.parametrize("world", FAST_SIZES)
@pytest.mark.parametrize("fmt", FORMATS)
def test_the_fault_is_named_exactly_in_every_format(jobs, world, fault, fmt) -> None:
    out, c = jobs(world, fault)
    report = analyze_proxy_ops(out / fmt)
    assert report.file_errors == []
    assert report.proxy_waits.waits.ranks_are_global
    assert _answer(report) == (c.finding, c.culprits, c.links)


@pytest.mark.slow
@pytest.mark.parametrize("fault", FAULTS)
@pytest.mark.parametrize("fmt", FORMATS)
def test_1024_ranks(jobs, fault, fmt) -> None:
    out, c = jobs(1024, fault)
    report = analyze_proxy_ops(out / fmt)
    assert _answer(report) == (c.finding, c.culprits, c.links)


@pytest.mark.parametrize("fault", FAULTS)
@pytest.mark.parametrize("source", ["chrome", "csv-per-process", "parquet-per-process"])
def test_communicator_local_sources_name_the_fault_in_each_communicator(jobs, fault, source) -> None:
    """The plugin's traces and each process's own table carry no global rank: every finding
    is (communicator, local rank), and mapped back through the job's truth it is the fault."""
    out, c = jobs(8, fault)
    truth = json.loads((out / "truth.json").read_text())
    members = {v["hash"]: v["members"] for v in truth["communicators"].values()}
    report = analyze_proxy_ops(out / source)
    assert report.file_errors == [] and not report.proxy_waits.waits.ranks_are_global
    assert _mapped(report, members) == _expected(c)


def _mapped(report: analysis.Report, members: dict) -> set:
    """Every named finding of communicator-local sources, in global ranks through the truth."""
    named = [f for f in report.proxy_waits.waits.findings if f.kind != "unresolved" and not f.ambiguous]
    mapped = {(f.kind, tuple(members[f.comms[0]][r] for r in f.ranks)) for f in named}
    # a congested receiver with one sender waiting for its credits names that link too
    return mapped | {
        ("slow_link", tuple(members[f.comms[0]][r] for r in (*f.credit_senders, *f.ranks)))
        for f in named
        if f.link_fits_too
    }


def _expected(c) -> set:
    return {(c.finding, (r,)) for r in c.culprits} | {("slow_link", link) for link in c.links}


@pytest.mark.parametrize("fault", ["credit_congestion", "credit_noise"])
@pytest.mark.parametrize("source", ["csv", "parquet", "csv-per-process", "parquet-per-process"])
@pytest.mark.parametrize("world", [16, 64, 256])
def test_credit_waits(jobs, world, fault, source) -> None:
    """A receiver seen only in its sender's credit waits, and credit waits within the noise,
    at 16, 64 and 256 ranks: with global ranks and from each process's own table."""
    out, c = jobs(world, fault)
    report = analyze_proxy_ops(out / source)
    assert report.file_errors == []
    if report.proxy_waits.waits.ranks_are_global:
        assert _answer(report) == (c.finding, c.culprits, c.links)
    else:
        truth = json.loads((out / "truth.json").read_text())
        assert _mapped(report, {v["hash"]: v["members"] for v in truth["communicators"].values()}) == _expected(c)


@pytest.mark.parametrize("fault", ["slow_gpu", "slow_link", "congestion"])
def test_probing_rules_name_a_propagated_victim_where_the_walk_names_the_root(jobs, fault) -> None:
    out, c = jobs(64, fault)
    report = analyze_proxy_ops(out / "parquet")
    probing = report.to_dict()["proxy_waits"]["probing"]
    root = c.culprits[0] if c.culprits else c.links[0][1]
    assert _answer(report) == (c.finding, c.culprits, c.links)
    assert probing["root_rank"] is not None and probing["root_rank"] != root
    classes = {row["attribution_class"] for row in probing["topology_attribution"]}
    assert classes <= {"propagated_victim", "local_victim_or_network"}, "'ambiguous' cannot occur"


def test_json_object_shape(jobs) -> None:
    out, c = jobs(8, "slow_link")
    d = analyze_proxy_ops(out / "jsonl").to_dict()["proxy_waits"]
    assert d["finding"] == "slow_link" and d["suspect_links"] == [list(c.links[0])]
    assert d["culprit_ranks"] == [] and c.links[0][1] in d["victim_ranks"]
    assert {"finding", "culprit_ranks", "victim_ranks", "suspect_links", "edges", "probing", "ranks_are_global"} <= set(
        d
    )
    top = d["edges"][0]
    assert top["excess_wait_ns"] == max(e["excess_wait_ns"] for e in d["edges"])
    link = [e for e in d["edges"] if (e["sender"], e["receiver"]) == c.links[0]]
    assert link and {e["class"] for e in link} == {"slow_link"}
    json.dumps(d)  # plain JSON all the way down


@pytest.mark.parametrize("fault", ["slow_gpu", "healthy"])
def test_with_dumps_the_evidence_says_whether_they_agree(jobs, tmp_path, fault) -> None:
    from benchmarks.synth import write_dump_set

    out, c = jobs(16, fault)
    dumps = tmp_path / "dumps"
    stuck = c.culprits[0] if c.culprits else None
    write_dump_set(dumps, 16, entries=300, culprit=stuck, fault="stuck" if stuck is not None else "none", tp=1, pp=2)
    report = analysis.analyze(dumps, use_cache=False, proxy_ops=out / "csv")
    d = report.to_dict()
    assert d["proxy_waits"]["agreement_with_dumps"] == ("agree" if stuck is not None else "both_quiet")
    assert report.suspect_ranks == list(c.culprits)
    assert any("agree" in e for e in report.evidence)
    local = analysis.analyze(dumps, use_cache=False, proxy_ops=out / "csv-per-process")
    comms = local.to_dict()["proxy_waits"]["communicators"]
    assert [x["ranks"] for x in comms if x["size"] == 16] == ["pg_config"], "the world maps through pg_config"
    assert {x["ranks"] for x in comms if x["size"] == 8} == {"local"}, "two groups of 8: cannot tell which"


def test_without_proxy_ops_the_field_is_null() -> None:
    from locations import SAMPLE_DUMPS

    assert analysis.analyze(SAMPLE_DUMPS / "stuck_compute").to_dict()["proxy_waits"] is None


def _tp_rows(pattern: str, congested: int, ops: int = 20) -> pd.DataFrame:
    """Proxy-op rows of probing's CSV export for a 16-rank job with 4-way tensor parallelism
    (groups of 4 consecutive ranks), as the issue reported them: every receive waits about
    60 us and every send 5 us for credits, except the sends to ``congested``, which wait
    4 ms an op for its clear-to-send. ``pattern``: ``all_to_all`` (each rank sends to the
    three others of its group) or ``ring`` (to the next one only)."""
    rng = random.Random(7)
    rows = []
    for group in range(4):
        members = list(range(4 * group, 4 * group + 4))
        comm = 1000 + group
        for seq in range(ops):
            for i, s in enumerate(members):
                peers = [members[(i + 1) % 4]] if pattern == "ring" else [m for m in members if m != s]
                for r in peers:
                    credit = 4_000_000 if r == congested else 5_000
                    ts = 1_760_000_000_000_000_000 + seq * 10_000_000
                    common = {"comm_hash": comm, "coll_func": "AllToAll", "seq": seq, "channel_id": 0, "ts": ts}
                    rows.append(
                        common
                        | {"rank": i, "peer": members.index(r), "_rank": s, "is_send": 1}
                        | {"send_gpu_wait_ns": rng.randint(20_000, 30_000), "send_peer_wait_ns": credit}
                        | {"send_wait_ns": rng.randint(50_000, 60_000), "recv_wait_ns": 0, "recv_flush_wait_ns": 0}
                    )
                    rows.append(
                        common
                        | {"rank": members.index(r), "peer": i, "_rank": r, "is_send": 0}
                        | {"send_gpu_wait_ns": 0, "send_peer_wait_ns": 0, "send_wait_ns": 0}
                        | {"recv_wait_ns": rng.randint(59_000, 62_000), "recv_flush_wait_ns": 1_000}
                    )
    return pd.DataFrame(rows)


@pytest.mark.parametrize("pattern", ["all_to_all", "ring"])
def test_a_receiver_seen_only_in_its_senders_credit_waits(tmp_path, pattern) -> None:
    """The reported case: credit waits alone name the receiver; with one sender waiting,
    a slow link from it fits too and both are named. The same job with the credit waits at
    the level of every other edge names nothing."""
    _tp_rows(pattern, congested=6).to_csv(tmp_path / "proxy_ops.csv", index=False)
    report = analyze_proxy_ops(tmp_path / "proxy_ops.csv")
    pw = report.proxy_waits.waits
    senders = (4, 5, 7) if pattern == "all_to_all" else (5,)
    links = ((5, 6),) if pattern == "ring" else ()
    assert _answer(report) == ("receiver_congestion", (6,), links)
    assert set(senders) <= set(pw.victim_ranks)
    (finding,) = [f for f in pw.findings if f.kind == "receiver_congestion"]
    assert finding.credit_senders == senders and finding.link_fits_too == (pattern == "ring")
    sentence = next(s for s in report.evidence if "clear-to-send" in s)
    assert ("both fit" in sentence) == (pattern == "ring")
    from analysis.views.waits import default_metric, wait_matrix

    assert default_metric(pw) == "send credit wait"
    matrix = wait_matrix(pw, default_metric(pw))
    hot = matrix.cells.loc[matrix.cells["receiver"] == 6]
    assert hot["waiting"].all() and (hot["value"] > 3.9).all(), "the matrix shows the credit waits, in ms per op"

    quiet = tmp_path / "quiet"
    quiet.mkdir()
    _tp_rows(pattern, congested=-1).to_csv(quiet / "proxy_ops.csv", index=False)
    assert _answer(analyze_proxy_ops(quiet / "proxy_ops.csv")) == ("none", (), ())
