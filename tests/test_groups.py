"""Process groups from pg_config: one group per (name, rank list)."""

from __future__ import annotations

import pandas as pd

from analysis import schema as s
from analysis.model.groups import _config_groups


def test_a_name_with_two_rank_lists_is_two_groups() -> None:
    # Megatron-style: every rank names its own tensor-parallel group "tp".
    rows = [(r, "tp", "TP", "[0, 1]" if r < 2 else "[2, 3]") for r in range(4)]
    rows += [(r, "0", "default_pg", "[0, 1, 2, 3]") for r in range(4)]
    configs = pd.DataFrame(rows, columns=[s.RANK, s.PG_NAME, s.PG_DESC, s.RANKS])
    configs[s.RANKS] = configs[s.RANKS].astype("category")
    groups, key_of = _config_groups(configs)
    assert sorted(groups) == ["0", "tp:0,1", "tp:2,3"]
    assert groups["tp:2,3"].ranks == (2, 3)
    assert key_of[(1, "tp")] == "tp:0,1"
    assert key_of[(3, "tp")] == "tp:2,3"
    assert key_of[(2, "0")] == "0"
    assert len(key_of) == 8
