"""Layer 3 of the one model in waits: a cycle the records and counts leave is explained by
what its waits need, the cheaper side of ``model/costs`` named, ties left undecided."""

from __future__ import annotations

from analysis.diagnosis.wait_explanation import CycleWait, in_turn, wait_cause
from analysis.model import costs

SEND = ("pp", 36)
ALL_REDUCE = ("mp", 3)


def test_a_wait_only_a_skip_or_an_extra_explains_names_the_skip_of_a_program_call():
    # rank 15 waits in a send rank 7 never posted; rank 7 waits in an all_reduce rank 15 holds
    # queued behind that send (its own block explains it)
    waits = [CycleWait(15, 7, SEND, False, True), CycleWait(7, 15, ALL_REDUCE, True, True)]
    cause = wait_cause(waits)
    assert cause is not None and (cause.ranks, cause.edit) == ((7,), "skip")
    assert (cause.cost, cause.against) == (costs.SKIP, costs.EXTRA_PROGRAM)


def test_a_call_the_dumps_show_as_the_waiters_own_names_the_waiter():
    waits = [CycleWait(0, 1, ("world", 9), False, False), CycleWait(1, 0, ALL_REDUCE, True, True)]
    cause = wait_cause(waits)
    assert cause is not None and (cause.ranks, cause.edit) == ((0,), "extra")


def test_waits_on_two_members_equal_costs_or_many_adders_decide_nothing():
    two = [CycleWait(0, 1, ("a", 1), False, True), CycleWait(1, 0, ("b", 1), False, True)]
    assert wait_cause(two) is None
    assert wait_cause([CycleWait(0, 1, ("a", 1), True, True), CycleWait(1, 0, ("b", 1), True, True)]) is None
    # two waiters with calls of their own: their two extras cost more than one skip of an own call
    own = [CycleWait(0, 2, ("w", 9), False, False), CycleWait(1, 2, ("w", 9), False, False)]
    cause = wait_cause([*own, CycleWait(2, 0, ALL_REDUCE, True, True)])
    assert cause is not None and cause.ranks == (2,)
    # one waiter with a call of its own and a program call: two extras against two skips
    # (2 + 2.5 each way), undecided
    mixed = [CycleWait(0, 2, ("w", 9), False, False), CycleWait(0, 2, ("v", 4), False, True)]
    assert wait_cause([*mixed, CycleWait(2, 0, ALL_REDUCE, True, True)]) is None


def test_a_rank_whose_records_put_the_call_it_is_waited_for_after_its_own_block_is_in_turn():
    # rank 3 issued embedding and model-parallel collectives in turn, and is blocked in the
    # embedding one: the model-parallel call a peer waits for it in comes next, a wait its
    # block explains; a rank that issued two model-parallel ones in a row broke the turns
    assert in_turn(["emb", "mp", "dp", "emb", "mp", "emb"], "emb", "mp")
    assert not in_turn(["emb", "mp", "emb", "mp", "mp"], "mp", "emb")
    assert not in_turn(["mp", "emb"], "emb", "mp")  # less than a round each way
    assert not in_turn(["mp", "mp", "mp"], "mp", "world")  # the other family never issued
