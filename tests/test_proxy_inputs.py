"""Reading proxy-op files: every format, defaults for missing columns, a per-file error for a
bad file (never a crash or a hang), probing's mock rows, in-flight ops, probing's exact rules."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from analysis.api import analyze_proxy_ops
from analysis.cli import main as cli_main
from analysis.diagnosis.probing_rules import probing_view
from analysis.ingest.proxy_ops import read_proxy_ops
from benchmarks.proxysim.formats import (
    PROBING_COLUMNS,
    inflight_rows,
    probing_mock_rows,
    write_table,
)
from benchmarks.proxysim.job import Fault, make_job, simulate


def _rows(**cols) -> pd.DataFrame:
    n = len(next(iter(cols.values())))
    base = {c: [0] * n for c in PROBING_COLUMNS}
    base["coll_func"] = ["AllReduce"] * n
    base.update(cols)
    return pd.DataFrame(base)


GOOD = _rows(rank=[0, 1], peer=[1, 0], is_send=[1, 0], comm_hash=[7, 7], recv_wait_ns=[0, 5])


@pytest.mark.parametrize(
    ("name", "content", "reason"),
    [
        ("empty.csv", b"", "the file is empty"),
        ("blank.json", b"   \n", "the file is empty"),
        ("broken.json", b'[{"rank": 1,', "invalid JSON"),
        ("object.json", b'{"rank": 1}', "no column 'peer', 'is_send'"),  # one JSON line, one row
        ("scalars.json", b"[1, 2, 3]", "row 0 is not an object"),
        ("nocols.csv", b"a,b\n1,2\n", "no column 'rank', 'peer', 'is_send'"),
        ("dir.csv", b"rank,peer,is_send\n0,1,2\n", "'is_send' is 2"),
        ("neg.csv", b"rank,peer,is_send,recv_wait_ns\n0,1,0,-5\n", "'recv_wait_ns' is negative"),
        ("text.csv", b"rank,peer,is_send\nzero,1,0\n", "'rank' holds text that is not an integer"),
        ("float.csv", b"rank,peer,is_send\n0.5,1,0\n", "'rank' holds numbers that are not integers"),
        ("nullrank.csv", b"rank,peer,is_send\n,1,0\n0,1,1\n", "row 0: 'rank' is empty"),
        ("bigrank.csv", b"rank,peer,is_send\n99999999,1,0\n", "outside 0.."),
        ("comm.csv", b"rank,peer,is_send,comm_hash\n0,1,0,zz\n", "column 'comm_hash' holds 'zz'"),
        ("junk.parquet", b"PAR1 not really parquet PAR1", "not a readable Parquet file"),
        ("junk.csv.gz", b"\x1f\x8b\x08\x00garbage", "corrupt gzip"),
        ("binary.csv", bytes(range(256)) * 4, ""),
        ("deep.json", b"[" * 100_000 + b"]" * 100_000, ""),
    ],
)
def test_a_bad_file_is_a_per_file_error_and_the_good_ones_are_read(tmp_path, name, content, reason) -> None:
    write_table(GOOD, tmp_path / "good.csv", "csv")
    (tmp_path / name).write_bytes(content)
    data = read_proxy_ops(tmp_path)
    assert len(data.ops) == 2, "the good file is still read"
    errors = {os.path.basename(e.file): e.error for e in data.errors}
    assert list(errors) == [name]
    assert reason in errors[name]


def test_a_fifo_named_like_a_file_does_not_hang(tmp_path) -> None:
    os.mkfifo(tmp_path / "waits.csv")
    code = "import sys; from analysis.ingest.proxy_ops import read_proxy_ops; print(read_proxy_ops(sys.argv[1]).errors)"
    out = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)], check=False, capture_output=True, text=True, timeout=60
    )
    assert "not a regular file" in out.stdout


def test_missing_optional_columns_take_defaults(tmp_path) -> None:
    (tmp_path / "few.csv").write_text("rank,peer,is_send,recv_wait_ns,send_gpu_wait_ns\n0,1,1,0,9\n1,0,0,9,0\n")
    data = read_proxy_ops(tmp_path / "few.csv")
    row = data.ops.iloc[0]
    assert data.errors == [] and str(row["comm_hash"]) == "0x0" and row["seq"] == 0
    assert row["coll_func"] == "unknown" and row["tp_rank"] == -1 and row["_rank"] == -1 and np.isnan(row["ts"])


def test_a_hash_cast_to_signed_is_the_same_communicator(tmp_path) -> None:
    h = 0xF00D_0000_0000_0001
    rows = _rows(rank=[0, 1], peer=[1, 0], is_send=[1, 0], comm_hash=[h, h])
    write_table(rows.astype({"comm_hash": np.uint64}), tmp_path / "a.parquet", "parquet")
    write_table(rows.astype({"comm_hash": np.uint64}), tmp_path / "b.csv", "csv")  # written as a signed int64
    (tmp_path / "c.json").write_text(json.dumps([{**r, "comm_hash": hex(h)} for r in rows.to_dict("records")]))
    data = read_proxy_ops(tmp_path)
    assert data.errors == []
    assert set(data.ops["comm_hash"].astype(str)) == {f"0x{h:016x}"}
    assert "-" in (tmp_path / "b.csv").read_text().splitlines()[1]


def test_probing_mock_rows_as_a_compatibility_case(tmp_path) -> None:
    """probing's mock names rank 5 (a victim) with its own rules; its receive rows name the
    rank they send to, so Flight Deck matches them to no send and blames nobody for them,
    and names rank 2, whose sends wait on its GPU while its receives do not."""
    write_table(probing_mock_rows(), tmp_path / "mock.csv", "csv")
    report = analyze_proxy_ops(tmp_path / "mock.csv")
    d = report.to_dict()["proxy_waits"]
    assert d["probing"]["root_rank"] == 5
    assert d["probing"]["interpretation"]["culprit_dominates"] is True
    assert d["finding"] == "slow_gpu" and d["culprit_ranks"] == [2]
    assert not d["ranks_are_global"]
    assert any(f["kind"] == "unresolved" and f["victims"] == [5] for f in d["findings"])
    assert any("peers look reversed" in e for e in report.evidence)


def test_inflight_ops_beside_the_waits(tmp_path) -> None:
    job = make_job(8, [Fault("slow_gpu", (5,))])
    rows, _ = simulate(job, iterations=3, seed=2)
    write_table(rows, tmp_path / "ops.parquet", "parquet")
    write_table(inflight_rows(job, 5, "dp1", "AllReduce", 3), tmp_path / "inflight.csv", "csv")
    report = analyze_proxy_ops(tmp_path)
    d = report.to_dict()["proxy_waits"]
    assert report.file_errors == []
    assert {r["g_rank"] for r in d["inflight"]} == {4, 6, 7}
    assert d["inflight"][0]["age_ns"] == 30 * 10**9
    assert any(e.startswith("nccl.inflight_ops: ranks 4, 6-7") for e in report.evidence)


def test_probing_edge_classes_exactly_as_its_sql() -> None:
    """Sender 0 -> receiver 1: GPU wait 6 of 10 -> propagated (root 0); 2 -> 3: 1 of 10 ->
    local (root 3); the join also matches roles, so 4 -> 5 with the sender in another
    dp_rank finds no send at all (G = 0) although the send is there."""
    rows = _rows(
        rank=[0, 1, 2, 3, 4, 5],
        peer=[1, 0, 3, 2, 5, 4],
        is_send=[1, 0, 1, 0, 1, 0],
        send_gpu_wait_ns=[6, 0, 1, 0, 9, 0],
        recv_wait_ns=[0, 10, 0, 10, 0, 10],
        dp_rank=[0, 0, 0, 0, 1, 0],
    )
    view = probing_view(rows)
    got = {
        (r["rank"], r["peer"]): (r["attribution_class"], r["attributed_root_rank"])
        for r in view["topology_attribution"]
    }
    assert got == {
        (1, 0): ("propagated_victim", 0),
        (3, 2): ("local_victim_or_network", 3),
        (5, 4): ("local_victim_or_network", 5),
    }
    summary = {r["rank"]: r["total_attributed_recv_wait_ns"] for r in view["root_culprit_summary"]}
    assert summary == {0: 10, 3: 10, 4: 10}, "the root summary joins on sender and receiver only"


def test_cli_exit_codes_without_dumps(tmp_path, capsys) -> None:
    write_table(probing_mock_rows(), tmp_path / "mock.jsonl", "jsonl")
    assert cli_main(["--proxy-ops", str(tmp_path / "mock.jsonl")]) == 1
    assert "PROXY WAITS: SLOW_GPU" in capsys.readouterr().out
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "x.csv").write_text("")
    assert cli_main(["--proxy-ops", str(tmp_path / "bad")]) == 2
    assert "x.csv: the file is empty" in capsys.readouterr().err
    assert cli_main(["--proxy-ops", str(tmp_path / "mock.jsonl"), "--json"]) == 1
    d = json.loads(capsys.readouterr().out)
    assert d["ranks_loaded"] == 0 and d["proxy_waits"]["finding"] == "slow_gpu"


def test_gzip_and_json_lines_are_read(tmp_path) -> None:
    lines = "\n".join(json.dumps(r) for r in GOOD.to_dict("records")).encode()
    (tmp_path / "w.jsonl.gz").write_bytes(gzip.compress(lines))
    data = read_proxy_ops(tmp_path)
    assert data.errors == [] and len(data.ops) == 2


def test_inflight_ops_alone_are_something_stuck(tmp_path, capsys) -> None:
    write_table(inflight_rows(make_job(8, []), 5, "dp1", "AllReduce", 3), tmp_path / "inflight.csv", "csv")
    assert cli_main(["--proxy-ops", str(tmp_path)]) == 1
    assert "ranks 4, 6-7 have ops in flight" in capsys.readouterr().out
