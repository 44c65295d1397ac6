"""Where the program called each collective from, judged over the whole job.

A call site names the program point a collective belongs to, so that ranks at the same
seq of a group can be compared. Per stack it is the innermost Python frame outside
torch (see ``ingest.stacks.call_site``), but programs route collectives through helpers
of their own (``comm.all_reduce`` -> ``_issue``): a helper's frame is the same for every
collective that passes through it and tells nothing about which call it is. A frame is
a helper when the job's stacks show it called from more than one place, or from only
one frame that is itself a helper (the inner steps of a helper: ``_issue`` ->
``_collective``); the call site is then the first frame, going outwards, that is not one
(a few helpers deep at most).
"""

from __future__ import annotations

from collections import defaultdict
from itertools import pairwise

import numpy as np
import pandas as pd

from .. import schema as s
from ..ingest.stacks import is_user_frame
from ..tables.rowkeys import SLICE_ROWS

MAX_HELPERS = 3
"""Helper frames skipped at most, going outwards from the innermost user frame."""


def _user_frames(frames: str) -> list[str]:
    return [line for line in frames.split("\n") if line and is_user_frame(line)]


def job_call_sites(stacks: pd.DataFrame) -> dict[int, str]:
    """stack id -> call site, with the job's helper frames skipped."""
    user = {int(sid): _user_frames(str(text)) for sid, text in zip(stacks[s.STACK_ID], stacks[s.FRAMES])}
    callers: dict[str, set[str]] = defaultdict(set)
    for frames in user.values():
        for inner, outer in pairwise(frames):
            callers[inner].add(outer)
    helper: dict[str, bool] = {}

    def is_helper(frame: str) -> bool:
        seen = []
        while frame not in helper and len(callers[frame]) == 1 and frame not in seen:
            seen.append(frame)  # an inner step of whatever its one caller is
            frame = next(iter(callers[frame]))
        known = helper.get(frame, len(callers[frame]) > 1)
        for f in [*seen, frame]:
            helper[f] = known
        return known

    sites = {}
    for sid, frames in user.items():
        if not frames:
            continue
        i = 0
        while i < min(MAX_HELPERS, len(frames) - 1) and is_helper(frames[i]):
            i += 1
        sites[sid] = frames[i]
    return sites


def cell_call_sites(stack_ids: pd.Series, stacks: pd.DataFrame, fallback: pd.Categorical) -> pd.Categorical:
    """The call site of each cell from its stack (``fallback`` where the stack is unknown)."""
    sites = job_call_sites(stacks) if len(stacks) else {}
    if not sites:
        return fallback
    names = sorted(set(sites.values()) | {str(c) for c in fallback.categories})
    code_of = {name: i for i, name in enumerate(names)}
    top = max(sites) + 1
    by_stack = np.full(max(top, 1), -1, dtype=np.int32)
    for sid, site in sites.items():
        if sid >= 0:
            by_stack[sid] = code_of[site]
    remap = np.array([code_of[str(c)] for c in fallback.categories] + [-1], dtype=np.int32)
    # a slice of cells at a time, into codes of the width the categorical keeps: cell-long
    # int64 stack ids and int32 codes were 16 bytes a cell (4,096 ranks: 93 MB at once)
    codes = np.empty(len(stack_ids), dtype=_code_width(len(names)))
    for start in range(0, len(codes), SLICE_ROWS):
        stop = start + SLICE_ROWS
        ids = stack_ids.iloc[start:stop].to_numpy(dtype=np.int64, na_value=-1)
        inside = (ids >= 0) & (ids < len(by_stack))
        part = by_stack[np.clip(ids, 0, len(by_stack) - 1, out=ids)]
        part[~inside] = -1
        given = fallback.codes[start:stop]
        np.copyto(part, remap[np.where(given < 0, len(remap) - 1, given)], where=part < 0)
        codes[start:stop] = part
    return pd.Categorical.from_codes(codes, names)


def _code_width(n: int) -> type[np.signedinteger]:
    """The codes' type ``pd.Categorical`` keeps for ``n`` categories (it would narrow wider ones)."""
    for width in (np.int8, np.int16, np.int32):
        if n < np.iinfo(width).max:
            return width
    return np.int64
