"""Process groups from pg_config: one group per (name, rank list)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from analysis import schema as s
from analysis.diagnosis.analysis import run_analysis
from analysis.model.groups import _config_groups
from analysis.model.pg_ids import ids_by_creation_order
from analysis.tables.load import load


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


def test_the_default_groups_status_is_read_where_no_entry_of_it_is_left() -> None:
    """A 30-entry buffer holds no entry of the default group on any rank, so no entry names
    its local pg id; torch makes it first in every process, so id 0 is it (pg_status keeps
    rank 0's lone pending all_reduce there)."""
    case = Path(__file__).parent / "regressions" / "extra_collective-842462"
    a = run_analysis(load(case, use_cache=False, workers=1))
    assert not (a.cells[s.PG_KEY] == "0").any()
    assert (a.progress[("0", 0)].enqueued, a.progress[("0", 0)].completed) == (1, -1)
    assert all(a.progress[("0", r)].enqueued == -1 for r in range(1, 8))


def test_a_rank_whose_status_lists_no_default_group_issued_none_of_it() -> None:
    """Real gloo dumps (JSON): rank 14 skipped its last data-parallel all_reduce and went on
    to the checkpoint barrier on the default group; ranks 12, 13 and 15, still at the
    all_reduce, never issued a collective on the default group, so neither their entries
    nor their pg_status list it. torch makes the default group first in every process
    (id 0) and lists a group in pg_status from its first collective on: they issued none
    of it yet, a count of nothing, not an unknown one."""
    case = Path(__file__).parent / "regressions" / "skip_collective-262198"
    a = run_analysis(load(case, use_cache=False, workers=1))
    default = next(k for k, g in a.groups.groups.items() if g.desc == "default_pg")
    assert all(a.progress[(default, r)].enqueued == -1 for r in (12, 13, 15))
    assert a.progress[(default, 14)].enqueued == 1


def test_a_rank_whose_buffer_lost_a_group_joins_it_through_its_status() -> None:
    """Real gloo dumps, stock pg_config, 30-entry buffers: rank 6's buffer holds only its
    tensor-parallel entries, so no entry of rank 6 names its data-parallel group. Its
    pg_status still lists local id 1, which every rank of the same id layout gives to a
    data-parallel group in its own entries; the one data-parallel group short of a member
    (ranks 0, 2, 4 beside 1, 3, 5, 7) is rank 6's, and its status says it issued 12."""
    case = Path(__file__).parent / "regressions" / "two_culprits-165644"
    a = run_analysis(load(case, use_cache=False, workers=1))
    assert a.groups.groups["1"].ranks == (0, 2, 4, 6)
    assert a.groups.status_key_of[(6, "1")] == "1"
    assert a.progress[("1", 6)].enqueued == 12


def test_a_lost_group_is_not_guessed_where_two_groups_are_short(tmp_path: Path) -> None:
    """Without rank 7's dump both data-parallel groups are short: which one rank 6 is in,
    nothing says, so it joins neither."""
    case = Path(__file__).parent / "regressions" / "two_culprits-165644"
    for f in case.iterdir():
        if f.name.startswith("rank_") and f.name != "rank_7":
            (tmp_path / f.name).write_bytes(f.read_bytes())
    a = run_analysis(load(tmp_path, use_cache=False, workers=1))
    assert a.groups.groups["1"].ranks == (0, 2, 4)
    assert (6, "1") not in a.groups.status_key_of


def _listed(groups_of: dict[int, list[str]]) -> pd.DataFrame:
    rows = [(r, name) for r, names in groups_of.items() for name in names]
    return pd.DataFrame(rows, columns=[s.RANK, s.PG_NAME])


def test_local_ids_follow_the_order_a_process_made_its_groups() -> None:
    """torch numbers the groups a process belongs to 0, 1, 2, ... as it makes them, and the
    default names count every group the job makes: rank 0's third group by name ('5') is its
    id 2, though no entry of rank 0 names it."""
    configs = _listed({0: ["0", "1", "5", "12"], 1: ["0", "1", "7"]})
    shown = {(0, "1"): "1", (1, "2"): "7"}
    order = ids_by_creation_order(configs, shown)
    assert order[(0, "2")] == "5" and order[(0, "3")] == "12" and order[(1, "0")] == "0"
    # one id the entries name otherwise, and the job is not read so at all
    assert ids_by_creation_order(configs, {**shown, (1, "1"): "7"}) == {}
    # groups named by the job (not numbers), or nothing to check the order against
    assert ids_by_creation_order(_listed({0: ["0", "tp"]}), {(0, "0"): "0"}) == {}
    assert ids_by_creation_order(configs, {}) == {}


def test_an_only_active_dump_reads_a_group_without_entries_through_its_local_id() -> None:
    """NCCL-shaped only-active dumps: rank 6 skipped its embedding all_reduce (group 46, id
    5) and no entry of it is left on rank 6; its pg_status says it issued one there, where
    rank 30, its peer, issued two."""
    case = Path(__file__).parent / "regressions" / "skip_collective-618747"
    a = run_analysis(load(case, use_cache=False, workers=1))
    assert a.groups.status_key_of[(6, "5")] == "46"
    assert (a.progress[("46", 6)].enqueued, a.progress[("46", 30)].enqueued) == (1, 2)
