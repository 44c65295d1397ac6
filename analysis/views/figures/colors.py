"""Colours shared by the figures."""

from __future__ import annotations

from collections.abc import Sequence

#: One colour per grid code (severity order): outside buffer, completed, started,
#: scheduled, not issued, mismatched.
STATE_COLORS = ("#eceff1", "#a5d6a7", "#fdd835", "#fb8c00", "#e53935", "#7b1fa2")
SUSPECT_COLOR = "#b71c1c"
MARK_COLOR = "#e65100"  # a failed health check or a proxy-wait culprit on a heatmap row
SELECT_COLOR = "#0d47a1"
#: Cells completed between an earlier snapshot and this one.
MOVED_COLOR = "rgba(13,71,161,0.45)"


def discrete_colorscale(colors: Sequence[str]) -> list[list]:
    """A stepped colorscale: code ``i`` maps exactly to ``colors[i]`` with zmin=-0.5."""
    n = len(colors)
    scale: list[list] = []
    for i, c in enumerate(colors):
        scale += [[i / n, c], [(i + 1) / n, c]]
    return scale
