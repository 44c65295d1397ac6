"""A page that draws the dashboard's heatmap for a synthetic 1,024 ranks x 2,000 seqs grid.

No dumps and no analysis: it exercises the aggregation, the block click and the region
view at a size that real sample dumps do not reach.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import streamlit as st

_ROOT = Path(__file__).resolve().parents[2]
if str(_ROOT) not in sys.path:
    sys.path.insert(0, str(_ROOT))

from analysis.views.grid import COMPLETED, NOT_ISSUED, SCHEDULED, Grid
from analysis.views.heatmap import HeatmapView, build_view
from dashboard import state
from dashboard.components import heatmap

N_RANKS, N_SEQS = 1024, 2000
STUCK_RANK, WAVEFRONT = 700, 1500


@st.cache_resource
def synthetic_grid() -> Grid:
    """Everyone completed up to the wavefront and waits in it; one rank never issued it."""
    codes = np.full((N_RANKS, N_SEQS), COMPLETED, dtype=np.int8)
    codes[:, WAVEFRONT:] = NOT_ISSUED
    codes[:, WAVEFRONT] = SCHEDULED
    codes[STUCK_RANK, WAVEFRONT] = NOT_ISSUED
    return Grid("synthetic", np.arange(N_RANKS), np.arange(N_SEQS), codes)


@st.cache_resource
def view_for(window: tuple[int, int, int, int] | None) -> tuple[HeatmapView, None]:
    return build_view(synthetic_grid(), window), None


def main() -> None:
    st.set_page_config(page_title="Synthetic grid", layout="wide")
    cell = heatmap.render_grid(synthetic_grid(), view_for, wavefront_seq=WAVEFRONT, suspects=[STUCK_RANK])
    window = state.get_window(st.session_state, "synthetic")
    st.text(f"window: {window.to_param() if window else 'none'}")
    st.text(f"cell: {cell[0]} {cell[1]}" if cell else "cell: none")


if __name__ == "__main__":
    main()
