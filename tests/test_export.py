"""One Parquet export: the command line's ``--parquet DIR`` and the dashboard's zip hold the
same tables, and lists (a group's ranks) stay lists in both."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import zipfile

import pandas as pd
from locations import ROOT, SAMPLE_DUMPS

import analysis
from analysis.report.export import parquet_ready
from dashboard import data

STUCK = SAMPLE_DUMPS / "stuck_compute"


def test_cli_parquet_and_dashboard_zip_hold_the_same_tables(tmp_path) -> None:
    out = tmp_path / "cli"
    proc = subprocess.run(
        [sys.executable, "-m", "analysis", str(STUCK), "--parquet", str(out), "--quiet", "--no-cache"],
        check=False,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 1, proc.stderr  # a hang was found
    report = analysis.analyze(STUCK, use_cache=False)
    zipped = data.parquet_zip(data.Loaded(str(STUCK), "test", report, 0.0))
    with zipfile.ZipFile(io.BytesIO(zipped)) as zf:
        names = sorted(zf.namelist())
        assert names == sorted(p.name for p in out.iterdir())
        for name in names:
            if name.endswith(".json"):
                assert json.loads(zf.read(name)) == json.loads((out / name).read_text())
                continue
            pd.testing.assert_frame_equal(pd.read_parquet(io.BytesIO(zf.read(name))), pd.read_parquet(out / name))
    groups = pd.read_parquet(out / "groups.parquet")
    member_lists = {tuple(int(r) for r in ranks) for ranks in groups["ranks"]}
    assert (4, 5) in member_lists, "the tensor_parallel group's ranks stay a list"


def test_parquet_ready_keeps_lists_and_text_and_turns_objects_into_text() -> None:
    df = pd.DataFrame(
        {"ranks": [[0, 1], [2, 3]], "name": ["a", None], "obj": [{"k": 1}, None], "n": [1, 2]},
    )
    ready = parquet_ready(df)
    assert ready["ranks"].tolist() == [[0, 1], [2, 3]]
    assert ready["name"].iloc[0] == "a" and pd.isna(ready["name"].iloc[1])
    assert ready["obj"].iloc[0] == "{'k': 1}" and pd.isna(ready["obj"].iloc[1])
    assert ready["n"] is df["n"] or ready["n"].equals(df["n"])
    assert df["obj"].tolist() == [{"k": 1}, None], "the input is not changed"
    buf = io.BytesIO()
    ready.to_parquet(buf, index=False)
    assert [list(x) for x in pd.read_parquet(buf)["ranks"]] == [[0, 1], [2, 3]]
