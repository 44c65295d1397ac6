"""One file's ``pg_config`` and ``pg_status`` as tables, checked."""

from __future__ import annotations

import re
from typing import Any

import pyarrow as pa

from .. import schema as s
from ..types import DumpFormatError, Limits
from .values import describe, require_int, text_label

_DIGITS = re.compile(r"\d+")


def _names_rank_above(text: str, max_rank: int) -> bool:
    """Whether ``text`` writes an integer above ``max_rank``; converts only when a number is long enough."""
    numbers = _DIGITS.findall(text)
    if not numbers or max(map(len, numbers)) < len(str(max_rank)):
        return False
    return any(len(n) > 18 for n in numbers) or max(map(int, numbers)) > max_rank


_RANK_LISTS_SEEN: dict[tuple[str, int], bool] = {}
"""Rank lists this process already checked: every rank's dump repeats the default
group's list (100 KB at 16k ranks), and scanning it per file made loading quadratic."""


def _names_rank_above_cached(text: str, max_rank: int) -> bool:
    if not 256 <= len(text) <= 1 << 20:  # short ones are cheap; huge ones are not kept
        return _names_rank_above(text, max_rank)
    key = (text, max_rank)
    if key not in _RANK_LISTS_SEEN:
        if len(_RANK_LISTS_SEEN) >= 256:
            _RANK_LISTS_SEEN.clear()
        _RANK_LISTS_SEEN[key] = _names_rank_above(text, max_rank)
    return _RANK_LISTS_SEEN[key]


def configs_table(rank: int, pg_config: Any, limits: Limits) -> pa.Table:
    if pg_config is None:
        pg_config = {}
    if type(pg_config) is not dict:
        raise DumpFormatError(f"'pg_config' is {describe(pg_config)}, expected a dict")
    if len(pg_config) > limits.max_groups:
        raise DumpFormatError(f"'pg_config' lists {len(pg_config)} groups")
    names, descs, ranks = [], [], []
    text_left = limits.max_file_bytes  # shared strings must not multiply into gigabytes
    for key, cfg in pg_config.items():
        if type(cfg) is not dict:
            raise DumpFormatError(f"pg_config[{text_label(key, 40)!r}] is {describe(cfg)}, expected a dict")
        name = cfg.get("name", key)
        ranks_value = cfg.get("ranks", "")
        if type(ranks_value) is list:
            if not set(map(type, ranks_value)) <= {int}:
                raise DumpFormatError(f"pg_config[{text_label(key, 40)!r}] 'ranks' is not a list of integers")
            ranks_value = repr(ranks_value) if max(map(abs, ranks_value), default=0) < 10**30 else "?"
        if type(name) is not str or type(ranks_value) is not str:
            raise DumpFormatError(f"pg_config[{text_label(key, 40)!r}] has a non-string name or ranks")
        if _names_rank_above_cached(ranks_value, limits.max_rank):
            raise DumpFormatError(f"pg_config[{text_label(key, 40)!r}] names a rank above {limits.max_rank}")
        if name == "" and ranks_value in ("", "[]"):
            continue  # gloo writes one empty placeholder group
        desc = cfg.get("desc", "")
        text_left -= len(name) + len(ranks_value) + (len(desc) if type(desc) is str else 0)
        if text_left < 0:
            raise DumpFormatError(f"'pg_config' holds more than {limits.max_file_bytes} characters")
        names.append(name)
        descs.append(desc if type(desc) is str else "")
        ranks.append(ranks_value)
    return pa.table(
        {s.RANK: pa.array([rank] * len(names), pa.int32()), s.PG_NAME: names, s.PG_DESC: descs, s.RANKS: ranks},
        schema=s.CONFIG_SCHEMA,
    )


def status_table(rank: int, pg_status: Any, limits: Limits) -> pa.Table:
    if pg_status is None:
        pg_status = {}
    if type(pg_status) is not dict:
        raise DumpFormatError(f"'pg_status' is {describe(pg_status)}, expected a dict")
    if len(pg_status) > limits.max_groups:
        raise DumpFormatError(f"'pg_status' lists {len(pg_status)} groups")
    rows: dict[str, list] = {s.PG_ID: [], s.LAST_ENQUEUED: [], s.LAST_STARTED: [], s.LAST_COMPLETED: []}
    for key, st in pg_status.items():
        if type(st) is not dict:
            raise DumpFormatError(f"pg_status[{text_label(key, 40)!r}] is {describe(st)}, expected a dict")
        rows[s.PG_ID].append(text_label(key, 64))
        for col, raw in (
            (s.LAST_ENQUEUED, "last_enqueued_collective"),
            (s.LAST_STARTED, "last_started_collective"),
            (s.LAST_COMPLETED, "last_completed_collective"),
        ):
            v = st.get(raw)
            rows[col].append(None if v is None else require_int(v, f"pg_status[{text_label(key, 40)!r}] '{raw}'"))
    rows[s.RANK] = [rank] * len(rows[s.PG_ID])
    return pa.table(rows, schema=s.STATUS_SCHEMA)
