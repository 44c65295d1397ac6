"""The small tables the dashboard shows, built from a report."""

from __future__ import annotations

from nccl_sets import coll, write_set

import analysis
from dashboard import tables


def _two_groups_named_one(folder):
    """Torch may give two groups one name (a name reused with another rank list): "1" holds
    ranks 0-1 on ranks 0 and 1, and ranks 2-3 on ranks 2 and 3. Rank 1 stops after seq 2."""
    per_rank = {}
    for r in range(4):
        members = [0, 1] if r < 2 else [2, 3]
        last = 2 if r == 1 else 3
        per_rank[r] = [coll("1", "tensor_parallel", members, q, op="all_reduce") for q in range(1, last + 1)]
    return write_set(folder, per_rank)


def test_progress_table_lists_groups_that_share_a_name_by_key(tmp_path) -> None:
    report = analysis.analyze(_two_groups_named_one(tmp_path), use_cache=False)
    keys = [g["pg_key"] for g in report.process_groups]
    assert sorted(keys) == ["1:0,1", "1:2,3"], "two groups, keyed by name and members"
    for order in (["1:0,1", "1:2,3"], ["1:2,3", "1:0,1"]):
        table = tables.progress_table(report, order)
        assert list(table["group"]) == ["1", "1"]
        assert list(table["ranks"]) == [{"1:0,1": "0-1", "1:2,3": "2-3"}[k] for k in order]
    behind = tables.progress_table(report, ["1:0,1", "1:2,3"]).iloc[0]
    assert behind["lagging ranks"] == "1" and behind["enqueued (min..max)"] == "2..3"


def test_columns_are_as_wide_as_their_longest_cell_and_short_tables_are_drawn_whole():
    import pandas as pd

    from dashboard.tables import MAX_COLUMN_PX, MAX_WHOLE_ROWS, column_widths, table_height

    df = pd.DataFrame({"ranks": ["0-3", "20-22, 24-26, 28-30, 32-34"], "t": ["2026-12-06 22:14:05.123456 UTC", None]})
    widths = column_widths(df)
    assert widths["ranks"] >= 7 * len("20-22, 24-26, 28-30, 32-34") and widths["t"] >= 232
    assert column_widths(pd.DataFrame({"x": ["y" * 1000]}))["x"] == MAX_COLUMN_PX
    assert table_height(17) == "content" and isinstance(table_height(MAX_WHOLE_ROWS + 1), int)
