"""The triage views of the dashboard through AppTest: confidence and caveats next to the
suspects, hosts beside ranks, the Job view of rank classes, and the comparison with an
earlier snapshot drawn over the heatmap. Expected values come from the dump files or
what the generator injected."""

from __future__ import annotations

import base64
import json
import sys

import numpy as np
import raw_dumps
from locations import ROOT, SAMPLE_DUMPS
from streamlit.testing.v1 import AppTest

from dashboard import state
from dashboard.components.text import md_escape

APP = str(ROOT / "dashboard" / "app.py")


def _open(monkeypatch, scenario: str, *args: str) -> AppTest:
    monkeypatch.setattr(sys, "argv", [APP, *args])
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params["scenario"] = scenario
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    return at


def _metrics(at: AppTest) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def _spec(at: AppTest) -> dict:
    return json.loads(at.get("plotly_chart")[0].proto.spec)


def test_confidence_and_caveats_beside_the_suspects(monkeypatch) -> None:
    at = _open(monkeypatch, "stuck_compute")
    assert _metrics(at)["Confidence"] == "high"
    at = _open(monkeypatch, "short_buffer")
    m = _metrics(at)
    assert m["Suspect ranks"] == "5" and m["Confidence"] == "medium"
    assert any(md_escape("ring buffers of ranks 2-3, 6-7 start after the divergence") in w.value for w in at.warning)


def test_hosts_beside_ranks_in_heatmap_and_drill_down(monkeypatch) -> None:
    at = _open(monkeypatch, "stuck_compute", "--ranks-per-node", "2")
    ticks = _spec(at)["layout"]["yaxis"]["ticktext"]
    assert any("rank 5 · node2" in t and "suspect" in t for t in ticks) and "rank 4 · node2" in ticks
    assert any(md_escape("drain: node2") in c.value for c in at.caption)
    at.number_input(key=state.RANKS_PER_NODE).set_value(4).run()
    assert "rank 4 · node1" in _spec(at)["layout"]["yaxis"]["ticktext"]
    at.session_state[state.CELL] = (5, 10)
    at.run()
    assert "rank 5 · seq 10 · node1" in [h.value for h in at.subheader]


def test_drill_down_shows_states_and_times_as_people_read_them(monkeypatch) -> None:
    at = _open(monkeypatch, "stuck_compute", "--ranks-per-node", "2")
    at.session_state[state.CELL] = (5, 10)
    at.run()
    written = raw_dumps.entry_at(SAMPLE_DUMPS / "stuck_compute", 5, "3", 10)
    assert written["state"] == "scheduled" and written["retired"], "gloo leaves finished work 'scheduled'"
    entry = next(d.value for d in at.dataframe if list(d.value.columns) == ["field", "value"])
    fields = dict(zip(entry["field"], entry["value"], strict=True))
    assert fields["state"] == "completed (recorded as scheduled, retired)"
    created = fields["time_created_ns"]
    assert created.startswith(f"{written['time_created_ns']} ns · ") and " UTC · " in created
    assert created.endswith("before the dump")
    newest = next(d.value for d in at.dataframe if "recorded state" in d.value.columns)
    assert set(newest["state"]) == {"completed"} and "created (UTC)" in newest.columns


def test_job_view_lists_classes_and_opens_one_into_the_heatmap(monkeypatch) -> None:
    at = _open(monkeypatch, "stuck_compute", "--ranks-per-node", "2")
    at.session_state[state.TAB] = "Job"
    at.run()
    graph = _spec(at)
    nodes = graph["data"][0]
    table = next(d.value for d in at.dataframe if "where" in d.value.columns)
    culprit = table.loc[table["ranks"] == "5"].iloc[0]
    assert bool(culprit["suspect"]) and culprit["size"] == 1
    assert int(culprit["class"]) in nodes["customdata"]
    k = nodes["customdata"].index(int(culprit["class"]))
    at.session_state[state.CLASS_GRAPH] = {
        "selection": {
            "points": [
                {
                    "curve_number": 0,
                    "point_index": k,
                    "x": nodes["x"][k],
                    "y": nodes["y"][k],
                    "customdata": int(culprit["class"]),
                }
            ],
            "point_indices": [k],
            "box": [],
            "lasso": [],
        }
    }
    at.run()
    assert f"Class {int(culprit['class'])}: 1 rank · suspect" in [h.value for h in at.subheader]
    at.button(key=f"{state.OPEN_RANK_PREFIX}{int(culprit['class'])}:5").click().run()
    assert at.session_state[state.TAB] == "Heatmap"
    newest = raw_dumps.newest_in_group(SAMPLE_DUMPS / "stuck_compute", 5, "3")
    assert at.session_state[state.PG] == "3" and at.session_state[state.CELL] == (5, newest["collective_seq_id"])


def _array(z) -> np.ndarray:
    """A plotly array as sent to the browser: base64 ``bdata`` with a dtype and shape."""
    if isinstance(z, dict):
        shape = tuple(int(n) for n in z["shape"].split(","))
        return np.frombuffer(base64.b64decode(z["bdata"]), dtype=np.dtype(z["dtype"])).reshape(shape)
    return np.asarray(z)


def _finished(folder, rank: int, group: str) -> int:
    done = [
        e["collective_seq_id"]
        for e in raw_dumps.raw_dump(folder, rank)["entries"]
        if e["retired"] and e["process_group"][0] == group
    ]
    return max(done, default=-1)


def test_a_sample_with_an_earlier_snapshot_is_compared(monkeypatch) -> None:
    at = _open(monkeypatch, "slow_rank")
    assert any("the job is slow, not hung" in i.value for i in at.info)
    spec = _spec(at)
    assert [t["type"] for t in spec["data"]] == ["heatmap", "heatmap", "scatter"]
    moved = spec["data"][1]
    assert moved["name"] == "completed since the earlier dumps"
    z = _array(moved["z"])
    later, earlier = SAMPLE_DUMPS / "slow_rank", SAMPLE_DUMPS / "slow_rank.earlier"
    seqs = np.arange(z.shape[1]) + spec["layout"]["xaxis"]["range"][0] + 0.5
    for row, rank in enumerate((4, 5)):  # the tensor_parallel group 3 of the wavefront
        lo, hi = _finished(earlier, rank, "3"), _finished(later, rank, "3")
        want = [int(lo < q <= hi) for q in seqs]
        assert z[row].tolist() == want, rank
        assert any(want), "rank moved in between"
    at.checkbox(key=state.SHOW_MOVED).uncheck().run()
    assert [t["type"] for t in _spec(at)["data"]] == ["heatmap", "scatter"]
