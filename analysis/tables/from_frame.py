"""An Arrow table over a loaded pandas frame's own buffers: what the tables cache writes
while the analysis runs, without keeping the loader's Arrow tables alive beside the frame.

Numeric columns (pandas ``ArrowDtype``) are the Arrow arrays themselves; a categorical
becomes a dictionary array over its codes (nulls where a code is -1). Reopened from the
cache and converted again (``load.to_dumpset``), the frame is the same.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa


def arrow_view(frame: pd.DataFrame) -> pa.Table:
    """``frame`` as an Arrow table sharing its columns' memory (codes and numbers are not
    copied; only a categorical's categories and null mask are made)."""
    return pa.table({name: _column(frame[name]) for name in frame.columns})


def _column(column: pd.Series) -> pa.Array | pa.ChunkedArray:
    values = column.array
    if isinstance(values, pd.Categorical):
        codes = np.asarray(values.codes)
        missing = codes < 0
        indices = pa.array(codes, mask=missing if missing.any() else None)
        dictionary = pa.array([str(c) for c in values.categories], pa.string())
        return pa.DictionaryArray.from_arrays(indices, dictionary)
    if isinstance(column.dtype, pd.ArrowDtype):
        return values.__arrow_array__()
    return pa.array(column)
