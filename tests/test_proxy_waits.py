"""NCCL proxy-op waits: simulated jobs of 8 to 1,024 ranks with a known fault, in every
format; the culprit, the link and the congested receiver named exactly, where probing's own
rules name a propagated victim."""

from __future__ import annotations

import json
from pathlib import Path

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
            write_job(
                out, world, list(c.faults), fmts, iterations=4 if world < 1024 else 3, seed=1, per_process=world <= 16
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
    pw = report.proxy_waits.waits
    assert report.file_errors == [] and not pw.ranks_are_global
    named = [f for f in pw.findings if f.kind != "unresolved" and not f.ambiguous]
    mapped = {(f.kind, tuple(members[f.comms[0]][r] for r in f.ranks)) for f in named}
    expected = {(c.finding, (r,)) for r in c.culprits} | {("slow_link", link) for link in c.links}
    assert mapped == expected


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
