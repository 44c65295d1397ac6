"""What the heatmap shows of a group's grid (analysis.views.heatmap), its plotly figure,
and how a chart selection becomes a page action."""

from __future__ import annotations

import numpy as np

from analysis.views.figures.heatmap import heatmap_figure
from analysis.views.grid import COMPLETED, NOT_ISSUED, SCHEDULED, Grid
from analysis.views.heatmap import build_view, first_divergence, recent_window, story_window
from dashboard import selection


def _stuck_grid(n_ranks: int = 64, n_seqs: int = 400, stuck: int = 37, wave: int = 300) -> Grid:
    codes = np.full((n_ranks, n_seqs), COMPLETED, dtype=np.int8)
    codes[:, wave] = SCHEDULED
    codes[stuck, wave] = NOT_ISSUED
    return Grid("g", np.arange(n_ranks), np.arange(100, 100 + n_seqs), codes)


def test_aggregation_keeps_stuck_cell():
    grid = _stuck_grid()
    view = build_view(grid, max_raw_cells=1000, max_rows=10, max_cols=20)
    assert view.aggregated and view.codes.shape == (10, 20)
    assert (view.codes == NOT_ISSUED).sum() == 1
    i, j = np.argwhere(view.codes == NOT_ISSUED)[0]
    r0, r1, s0, s1 = view.block_at(view.x_centres()[j], view.y_centres()[i])
    assert r0 <= 37 < r1 and s0 <= 400 <= s1
    assert "each cell = 7 ranks x 20 seqs" in view.describe()


def test_small_grid_is_raw_with_overlay_and_vline():
    grid = _stuck_grid(8, 20, stuck=3, wave=10)
    view = build_view(grid)
    assert not view.aggregated
    fig = heatmap_figure(view, wavefront_seq=110, suspects=[3], selected=(3, 110))
    heat, overlay = fig.data
    assert heat.type == "heatmap" and overlay.type == "scatter"
    assert len(overlay.x) == 8 * 20 and overlay.marker.opacity == 0
    assert fig.layout.xaxis.range == (99.5, 119.5) and fig.layout.yaxis.range == (7.5, -0.5)
    shapes = fig.layout.shapes
    assert any(s.type == "line" and s.x0 == 110 for s in shapes)
    assert any(s.name == "suspect 3" and s.y0 == 2.5 for s in shapes)
    assert any(s.name == "selected" and s.x0 == 109.5 for s in shapes)
    assert list(heat.colorbar.ticktext)[4] == "not issued"


def test_long_history_opens_on_newest_seqs():
    grid = _stuck_grid(8, 1500, stuck=3)
    assert recent_window(grid, 120) == (0, 8, 1480, 1599)
    assert recent_window(_stuck_grid(8, 100, stuck=3, wave=50), 120) is None
    view = build_view(grid, recent_window(grid, 120))
    assert not view.aggregated and view.codes.shape == (8, 120)


def _run_ahead_grid(ahead: int = 129) -> Grid:
    """Peers enqueued ``ahead`` collectives past the wavefront (seq 300) that rank 3 never issued."""
    codes = np.full((8, 400 + ahead), COMPLETED, dtype=np.int8)
    codes[:, 300:] = SCHEDULED
    codes[3, 300:] = NOT_ISSUED
    return Grid("g", np.arange(8), np.arange(1, 401 + ahead), codes)


def test_first_window_holds_wavefront_and_divergence_however_far_peers_ran_ahead():
    grid = _run_ahead_grid()
    assert first_divergence(grid) == 301
    r0, r1, s0, s1 = story_window(grid, wavefront_seq=301, max_cols=40)
    assert (r0, r1) == (0, 8) and s0 <= 301 <= s1 and s1 - s0 + 1 == 40
    assert s0 < 290, "the history before the wavefront is on screen"
    assert recent_window(grid, 40)[2] > 301, "the newest seqs alone would miss it"
    # Without a wavefront (another group) the first divergence anchors the window.
    assert story_window(grid, None, max_cols=40) == (r0, r1, s0, s1)
    # A group whose members never part opens on its newest seqs.
    calm = Grid("h", np.arange(4), np.arange(1, 101), np.full((4, 100), COMPLETED, dtype=np.int8))
    assert first_divergence(calm) is None and story_window(calm, None, 40) == recent_window(calm, 40)


def test_window_shows_full_resolution():
    grid = _stuck_grid()
    view = build_view(grid, (30, 40, 390, 410), max_raw_cells=1000)
    assert not view.aggregated and view.codes.shape == (10, 21)
    assert view.cell_at(400, 7) == (37, 400)


def test_selection_actions():
    grid = _stuck_grid()
    big = build_view(grid, max_raw_cells=1000, max_rows=10, max_cols=20)
    ev = {"selection": {"points": [{"x": 410.0, "y": 38.0}], "box": []}}
    assert selection.action_for(big, ev).region == big.block_at(410.0, 38.0)
    raw = build_view(grid, (30, 40, 390, 410), max_raw_cells=1000)
    assert selection.action_for(raw, {"selection": {"points": [{"x": 400, "y": 7}], "box": []}}).cell == (37, 400)
    box = {"selection": {"points": [], "box": [{"x": [395.2, 401.4], "y": [1.6, 4.2]}]}}
    assert selection.action_for(raw, box).region == (32, 35, 395, 401)
    assert selection.action_for(raw, {"selection": {"points": [], "box": []}}) is None
    assert selection.signature({"selection": {"points": [], "box": []}}) is None
