"""Showing strings that came from dumps as text, never as markup."""

from __future__ import annotations

import re

_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~$:])")


def md_escape(text: object) -> str:
    """Escape every Markdown (and Streamlit directive) character so the text renders literally."""
    return _MD_SPECIAL.sub(r"\\\1", "" if text is None else str(text))
