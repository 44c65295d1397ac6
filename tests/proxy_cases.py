"""Simulated proxy-op waits with a known fault, for the tests: where to put each fault in a
job of ``world`` ranks, and what an exact answer is."""

from __future__ import annotations

import random
from dataclasses import dataclass

from benchmarks.proxysim.job import Fault, layout

FAULTS = ("slow_gpu", "two_slow_gpus", "slow_link", "congestion", "credit_congestion", "credit_noise", "healthy")


@dataclass(frozen=True)
class Case:
    name: str
    faults: tuple[Fault, ...]
    finding: str
    culprits: tuple[int, ...]
    links: tuple[tuple[int, int], ...]


def case(name: str, world: int, seed: int = 0) -> Case:
    """Faults at ranks drawn from ``seed``; the link and the congested receiver are ring
    neighbours in a data-parallel group, the second slow GPU in another pipeline stage, the
    receiver congested on its pipeline receives a first stage (its one sender there waits for
    its credits, so a slow link from that sender fits too: both are named)."""
    pp, dp = layout(world)
    rng = random.Random(world * 7919 + seed)
    k = rng.randrange(world)
    stage, replica = divmod(k, dp)
    nxt = stage * dp + (replica + 1) % dp
    other = ((stage + 1) % pp) * dp + rng.randrange(dp)
    if name == "slow_gpu":
        return Case(name, (Fault("slow_gpu", (k,)),), "slow_gpu", (k,), ())
    if name == "two_slow_gpus":
        return Case(
            name, (Fault("slow_gpu", (k,)), Fault("slow_gpu", (other,))), "slow_gpu", tuple(sorted({k, other})), ()
        )
    if name == "slow_link":
        return Case(name, (Fault("slow_link", (k, nxt)),), "slow_link", (), ((k, nxt),))
    if name == "congestion":
        return Case(name, (Fault("congestion", (nxt,)),), "receiver_congestion", (nxt,), ())
    if name == "credit_congestion":  # a first stage's pipeline receives: only its sender's credit waits show it
        first, sender = replica, dp + replica  # its one pipeline sender: stage 1 of its replica
        return Case(name, (Fault("credit_congestion", (first,)),), "receiver_congestion", (first,), ((sender, first),))
    if name == "credit_noise":  # credit waits within the noise: nothing to name
        return Case(name, (Fault("credit_noise", (nxt,)),), "none", (), ())
    if name == "healthy":
        return Case(name, (), "none", (), ())
    raise ValueError(name)
