"""A call as text, whole: what two entries must share to be the same call of the program."""

from __future__ import annotations

import pandas as pd

from .. import schema as s
from ..opnames import is_exchange


def known_site(site: object) -> bool:
    """Whether ``site`` names a call site (a dump without stacks leaves it empty: blank,
    "None", or a missing value)."""
    return isinstance(site, str) and site not in ("", "nan", "None")


def call_text(rows: pd.DataFrame, columns: tuple[str, ...] = (s.OP, s.INPUT_SIZES, s.INPUT_DTYPES)) -> pd.DataFrame:
    """Each row's whole call as text: op, input sizes (blank for an exchange: its ranks send
    uneven amounts) and dtypes, or the ``columns`` given."""
    text = rows[list(columns)].astype(str)
    text.loc[text[s.OP].map(is_exchange), s.INPUT_SIZES] = ""
    return text
