"""A table whose columns are as wide as their longest cell and whose rows are all on screen."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd
import streamlit as st

from .. import tables


def show(df: pd.DataFrame | list[dict[str, Any]], labels: Mapping[str, str] | None = None, **kwargs: Any) -> Any:
    """``st.dataframe`` with each column sized to its text (``labels`` renames columns); other
    keyword arguments go to it. Returns what it returns (the selection, with ``on_select``)."""
    frame = df if isinstance(df, pd.DataFrame) else pd.DataFrame(df)
    labels = labels or {}
    widths = tables.column_widths(frame.rename(columns=dict(labels)))
    config = {
        str(col): st.column_config.Column(labels.get(col), width=widths[str(labels.get(col, col))])
        for col in frame.columns
    }
    kwargs.setdefault("height", tables.table_height(len(frame)))
    return st.dataframe(frame, hide_index=True, width="stretch", column_config=config, **kwargs)
