"""Layer 3 of the one model in waits: a cycle the records and counts leave is explained by
what its waits need, the cheaper side of ``model/costs`` named, ties left undecided."""

from __future__ import annotations

from analysis.diagnosis.wait_explanation import CycleWait, in_routine, in_turn, out_of_turn, wait_cause
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


def test_one_member_at_one_end_of_every_wait_explains_them_by_one_departure():
    # rank 3 waits for ranks 0-2 in a barrier they never issued; they wait for it in an
    # all_reduce it never issued: its one skip explains every wait, ranks 0-2 skipping the
    # barrier would take three
    waits = [CycleWait(3, r, ("world", 1), False, True) for r in (0, 1, 2)]
    waits += [CycleWait(r, 3, ("mp", 2), False, True) for r in (0, 1, 2)]
    cause = wait_cause(waits)
    assert cause is not None and (cause.ranks, cause.edit, cause.cost) == ((3,), "skip", costs.SKIP)
    # a member waiting in two calls at once is no single departure
    assert wait_cause([*waits, CycleWait(3, 0, ("dp", 5), False, True)]) is None
    # rank 3 waits on ranks 0-2, held elsewhere (they wait on rank 4, not on it): its skip
    # of the send rank 5 waits for does not hold them, and nothing is decided
    held = [CycleWait(3, r, ("world", 1), False, True) for r in (0, 1, 2)]
    held += [CycleWait(r, 4, ("pp", 2), True, True) for r in (0, 1, 2)]
    held += [CycleWait(5, 3, SEND, False, True), CycleWait(4, 5, ("pp", 3), True, True)]
    assert wait_cause(held) is None


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


def test_the_newest_call_that_breaks_two_families_turns_is_out_of_turn():
    assert out_of_turn(["emb", "mp", "emb", "mp", "mp"]) == ("mp", "emb")
    assert out_of_turn(["emb", "mp", "emb", "mp"]) is None  # in turn
    assert out_of_turn(["mp", "mp"]) is None  # no other family
    assert out_of_turn(["emb", "mp", "mp", "emb", "emb"]) is None  # the turns were broken before
    # a family issued several times a step never takes turns with one
    assert out_of_turn(["tp", "tp", "mp", "tp", "tp", "mp", "mp"]) is None
    # a first checkpoint barrier is in turn with nothing
    assert out_of_turn(["emb", "mp", "emb", "mp", "world"]) is None


def test_a_member_blocked_in_a_call_of_its_own_is_the_cause_where_no_other_explains_for_less():
    # rank 1 is blocked in a second model-parallel all_reduce in a row (its own); rank 0 waits
    # for it in a barrier it never issued, and it waits for rank 0 in that all_reduce: the
    # waits need edits on two members, and one extra of rank 1 explains both
    waits = [CycleWait(0, 1, ("world", 1), False, True), CycleWait(1, 0, ("mp", 4), False, False)]
    alone = wait_cause(waits)  # its call is not the program's: rank 0 skipping it costs more
    assert alone is not None and (alone.ranks, alone.edit) == ((1,), "skip")
    cause = wait_cause(waits, own={1: ("mp", 4)})
    assert cause is not None and (cause.ranks, cause.edit, cause.cost) == ((1,), "extra", costs.EXTRA)
    assert cause.against > costs.EXTRA
    # a wait on a third member is not explained by rank 1's extra: nothing decided
    third = [*waits, CycleWait(1, 2, ("dp", 7), False, True)]
    assert wait_cause(third, own={1: ("mp", 4)}) is None


def test_a_block_after_the_call_that_always_followed_the_previous_one_is_in_routine():
    # calls: 1 tensor-parallel, 2 data-parallel, 3 embedding, 4 grad-norm all_reduce, 5 barrier
    step = [1, 2, 2, 3, 4]
    assert in_routine([*step, 1, 2, 2, 3, 4])  # the embedding call was followed by the grad norm
    assert not in_routine([*step, 1, 2, 2, 3, 5])  # a barrier where the grad norm came before
    assert not in_routine([*step, 1, 2, 2])  # after a data-parallel call came another and the embedding
    assert not in_routine([3, 4])  # no earlier record of the previous call
