"""Stack codes group exactly the entries whose stacks are equal, however the frames are shared."""

from __future__ import annotations

import copy

from hypothesis import given, settings
from hypothesis import strategies as st

from analysis.ingest.stacks import stack_codes


def _frame(i: int) -> dict:
    return {"name": f"f{i}", "filename": f"/src/m{i % 3}.py", "line": i}


@st.composite
def frame_columns(draw) -> list:
    """Stacks drawn from a few shared frame objects; many share their ends and length."""
    pool = [_frame(i) for i in range(draw(st.integers(1, 6)))]
    stacks = draw(
        st.lists(
            st.lists(st.integers(0, len(pool) - 1), min_size=0, max_size=6),
            min_size=1,
            max_size=12,
        )
    )
    column = [[pool[i] for i in stack] for stack in draw(st.lists(st.sampled_from(stacks), max_size=80))]
    if draw(st.booleans()):  # a JSON dump: equal frames are distinct objects
        column = copy.deepcopy(column)
    if column and draw(st.booleans()):
        column[draw(st.integers(0, len(column) - 1))] = None
    return column


@settings(max_examples=300, deadline=None)
@given(frame_columns())
def test_codes_match_equality(column: list) -> None:
    codes, distinct = stack_codes(column)
    assert len(codes) == len(column)
    assert sorted(set(codes.tolist())) == list(range(len(distinct)))
    for entry, code in zip(column, codes.tolist()):
        assert distinct[code] == entry
    for i, a in enumerate(column):
        for j, b in enumerate(column[:i]):
            if a is not None and b is not None and [id(f) for f in a] == [id(f) for f in b]:
                assert codes[i] == codes[j]


def test_many_stacks_with_the_same_ends() -> None:
    """More distinct middles than comparison rounds: the rest are keyed frame by frame."""
    ends = _frame(0), _frame(1)
    middles = [_frame(10 + i) for i in range(40)]
    column = [[ends[0], middles[i % 40], ends[1]] for i in range(400)]
    codes, distinct = stack_codes(column)
    assert len(distinct) == 40
    assert codes.tolist() == [codes[i % 40] for i in range(400)]
