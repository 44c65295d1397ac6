"""The page's few style rules: values wrap instead of being cut, and no empty band above the title."""

from __future__ import annotations

import streamlit as st

#: Streamlit cuts a metric's value with an ellipsis at its column's width ("missing partic…")
#: and pads the page 6rem above the title. Metric values wrap here, in a size that holds a
#: failure class at 1280 px, and the page starts under the toolbar.
_CSS = """
<style>
[data-testid="stMainBlockContainer"] { padding-top: 3rem; }
[data-testid="stMetricValue"] { font-size: 1.6rem; }
[data-testid="stMetricValue"] > div, [data-testid="stMetricValue"] p {
  white-space: normal; overflow: visible; text-overflow: clip; overflow-wrap: anywhere; line-height: 1.25;
}
</style>
"""


def apply() -> None:
    """Add the rules to the page (an element without height)."""
    st.html(_CSS)
