"""How far each rank gets: the ranks' programs played against each other.

Two sets of rules:

* ``gloo`` (what the real runs do; verified with torch 2.13): every op is
  waited for before the next one is issued; a collective completes when every
  member has issued it with the same op; different ops at one sequence number
  hang cleanly; the same op with different byte counts aborts the process that
  receives more than it expects (the case is then not generated), except a
  zero-element tensor, which completes at once on its own rank and leaves its
  peers waiting; an all_to_all whose receiver expects more rows than are sent
  completes; send/recv pair up in order per (sender, receiver) and a send
  waits for its recv; a reduce_scatter_tensor whose input's first dimension is
  not the group size times its output's aborts the process that issues it
  (torch 2.13 checks shapes, not element counts; the case is not generated).
* ``nccl`` (for the NCCL-shaped synthetic dumps): the host enqueues ops
  without waiting until a host synchronisation (``.item()``, a barrier, the
  end of training); the device runs a rank's ops in order, an op is *started*
  when it reaches the head of that queue and *completed* when every member has
  started it (collectives) or its peer has started the matching op (send/recv);
  ops or byte counts that differ at one sequence number never complete.

The result is every issued op per rank with its state, each rank's end state
(done, blocked, stuck, dead) and what a blocked rank waits on.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from benchmarks.corpus.program import Coll, Item, P2PBatch, P2POp, Programs, Stall, Sync

T0_NS = 1_718_000_000_000_000_000
OP_NS = 40_000  # host time between two issued ops
SYNC_NS = 5_000
BYTES_PER_NS = 20.0  # device time of an op: a fixed 20 us plus its bytes at 20 GB/s


def _duration(op: Coll | P2POp) -> int:
    nbytes = op.in_spec.nbytes if isinstance(op, Coll) else op.spec.nbytes
    return 20_000 + int(nbytes / BYTES_PER_NS)


class Abort(Exception):
    """The rules predict that gloo aborts a process (mismatched byte counts)."""


@dataclass
class Entry:
    """One op a rank issued, as its Flight Recorder holds it."""

    rank: int
    op: Coll | P2POp
    state: str = "scheduled"  # scheduled / started / completed
    t_created: int = 0
    t_started: int | None = None
    t_completed: int | None = None
    record_id: int = 0

    @property
    def is_p2p(self) -> bool:
        return isinstance(self.op, P2POp)


@dataclass
class _Unit:
    """What one wait covers: a collective, or a batch of send/recv."""

    entries: list[Entry]
    item: Coll | P2PBatch

    @property
    def done(self) -> bool:
        return all(e.state == "completed" for e in self.entries)


@dataclass
class Outcome:
    mode: str
    entries: dict[int, list[Entry]]
    final: dict[int, str]  # done / blocked / stuck / dead
    waiting: dict[int, str] = field(default_factory=dict)
    stalled_at: dict[int, Stall] = field(default_factory=dict)
    hung_collectives: list[tuple[str, int]] = field(default_factory=list)  # (group name, seq) that never completes

    def pending(self, rank: int) -> list[Entry]:
        return [e for e in self.entries[rank] if e.state != "completed"]


def describe(item: Coll | P2PBatch | P2POp, gloo: bool = True) -> str:
    """In the words a real gloo rank uses for what it waits on (``gloo.RealComm``)."""
    if isinstance(item, Coll):
        return f"{item.op} {item.group.desc} (group {item.group.name}) seq {item.seq} in {item.site}"
    if isinstance(item, P2POp):
        return f"{item.kind} {'to' if item.kind == 'send' else 'from'} rank {item.peer}"
    ops = ", ".join(describe(op) for op in item.ops)
    return f"{item.site} ({ops}, {item.ops[0].group.desc}{', not recorded by gloo' if gloo else ''})"


def simulate(programs: Programs, mode: str) -> Outcome:
    """Play every rank's program to the point where nothing can move."""
    if mode not in ("gloo", "nccl"):
        raise ValueError(mode)
    gloo = mode == "gloo"
    world = programs.topo.layout.world_size
    progs: dict[int, list[Item]] = programs.items
    pc = dict.fromkeys(range(world), 0)
    cpu = dict.fromkeys(range(world), "running")  # running / waiting / sync / stuck / dead / done
    stream: dict[int, list[_Unit]] = {r: [] for r in range(world)}
    entries: dict[int, list[Entry]] = {r: [] for r in range(world)}
    stalled: dict[int, Stall] = {}
    # Each rank has its own clock: issuing advances it; a wait jumps it to the awaited completion.
    clock = {r: T0_NS + (r * 7_919) % 50_000 for r in range(world)}
    device_free = dict(clock)  # when each rank's device queue is free for the next op
    # collective (group, seq) -> rank -> entry once posted; p2p channel (src, dst) -> ordered entries
    sends: dict[tuple[int, int], list[Entry]] = defaultdict(list)
    recvs: dict[tuple[int, int], list[Entry]] = defaultdict(list)
    hung: set[tuple[str, int]] = set()
    # gloo broadcast (group, seq) -> every member that issued it, completed or not
    bcast_posted: dict[tuple[str, int], dict[int, Entry]] = defaultdict(dict)

    def tick(rank: int, ns: int) -> int:
        clock[rank] += ns
        return clock[rank]

    def issue(rank: int, item: Coll | P2PBatch) -> _Unit:
        if gloo and isinstance(item, Coll) and item.op == "reduce_scatter":
            _gloo_reduce_scatter_shapes(item)
        ops: list[Coll | P2POp] = [item] if isinstance(item, Coll) else list(item.ops)
        unit_entries = []
        for op in ops:
            e = Entry(rank, op, t_created=tick(rank, OP_NS), record_id=len(entries[rank]))
            entries[rank].append(e)
            unit_entries.append(e)
            if isinstance(op, P2POp):
                if op.kind == "send":
                    sends[(rank, op.peer)].append(e)
                else:
                    recvs[(op.peer, rank)].append(e)
        unit = _Unit(unit_entries, item)
        if gloo:
            for e in unit_entries:
                e.t_started = e.t_created  # gloo records no start; it is only used for timing here
            if isinstance(item, Coll) and item.in_spec.numel == 0:
                complete(unit.entries[0], unit.entries[0].t_created)  # a zero-element gloo collective returns at once
        stream[rank].append(unit)
        return unit

    def complete(e: Entry, t: int) -> None:
        if e.state != "completed":
            if e.t_started is None:
                e.t_started = t
            e.state = "completed"
            e.t_completed = t
            device_free[e.rank] = max(device_free[e.rank], t)

    def finish(group: list[Entry]) -> None:
        """Complete entries that match: at the latest start among them, plus the op's device time."""
        t = max(e.t_started or e.t_created for e in group) + _duration(group[0].op)
        for e in group:
            complete(e, t)

    def posted(e: Entry) -> bool:
        """gloo: issued and not finished; nccl: its unit is at the head of the rank's device queue."""
        if e.state == "completed":
            return False
        if gloo:
            return True
        return e.state == "started"

    def step_cpu(rank: int) -> bool:
        moved = False
        while cpu[rank] == "running":
            prog = progs[rank]
            if pc[rank] >= len(prog):
                if gloo or not stream[rank]:
                    cpu[rank] = "done"
                else:
                    cpu[rank] = "sync"  # the end of training waits for the device
                return True
            item = prog[pc[rank]]
            if isinstance(item, Stall):
                dies = item.fault.action == "crash" and item.fault.arg == "exit"
                cpu[rank] = "dead" if dies else "stuck"
                stalled[rank] = item
                return True
            if isinstance(item, Sync):
                if not gloo and stream[rank]:
                    cpu[rank] = "sync"
                    return moved
                tick(rank, SYNC_NS)
                pc[rank] += 1
                moved = True
                continue
            issue(rank, item)
            pc[rank] += 1
            moved = True
            if gloo:
                cpu[rank] = "waiting"
        return moved

    def start_heads() -> bool:
        moved = False
        for rank in range(world):
            q = stream[rank]
            while q and q[0].done:
                q.pop(0)
                moved = True
            if q and not gloo:
                for e in q[0].entries:
                    if e.state == "scheduled":
                        e.state = "started"
                        e.t_started = max(e.t_created, device_free[rank]) + 2_000
                        moved = True
                head = q[0]
                if isinstance(head.item, Coll) and head.item.in_spec.numel == 0:
                    e = head.entries[0]
                    complete(e, (e.t_started or e.t_created) + 1_000)  # ncclAllReduce of count 0 returns at once
                    moved = True
        return moved

    def match_collectives() -> bool:
        moved = False
        by_key: dict[tuple[str, int], dict[int, Entry]] = defaultdict(dict)
        for rank in range(world):
            for unit in stream[rank][-1:] if gloo else stream[rank][:1]:  # only these can be posted
                e = unit.entries[0]
                if isinstance(e.op, Coll) and posted(e):
                    by_key[(e.op.group.name, e.op.seq)][rank] = e
        for key, got in by_key.items():
            group = next(iter(got.values())).op.group
            if gloo and any(e.op.op == "broadcast" for e in got.values()):  # type: ignore[union-attr]
                moved |= gloo_broadcast(key, group.ranks, got)
                continue
            if len(got) < len(group.ranks) or key in hung:
                continue
            ops = [got[r].op for r in group.ranks]
            assert all(isinstance(o, Coll) for o in ops)
            if len({o.op for o in ops}) > 1:  # type: ignore[union-attr]
                hung.add(key)
                continue
            if not _sizes_agree(ops, gloo):  # type: ignore[arg-type]
                hung.add(key)
                continue
            finish(list(got.values()))
            moved = True
        return moved

    def gloo_broadcast(key: tuple[str, int], members: tuple[int, ...], got: dict[int, Entry]) -> bool:
        """gloo's binomial-tree broadcast: a rank is done once it has received and its children posted.

        A member that is absent (not there yet, or in another op) blocks only its
        parent's send and its own subtree; the other members complete.
        """
        posted = bcast_posted[key]
        for r, e in got.items():
            if e.op.op == "broadcast":  # type: ignore[union-attr]
                posted[r] = e
        if len({e.op.in_spec.nbytes for e in posted.values()}) > 1:  # type: ignore[union-attr]
            raise Abort(f"broadcast in group {key[0]} seq {key[1]} with different byte counts")
        here = {members.index(r) for r in posted}
        moved = False
        t = max(e.t_started or e.t_created for e in posted.values()) + _duration(next(iter(posted.values())).op)
        for v in sorted(here):
            e = posted[members[v]]
            if e.state != "completed" and _broadcast_done(v, len(members), here):
                complete(e, t)
                moved = True
        return moved

    def match_p2p() -> bool:
        moved = False
        for channel, s_list in sends.items():
            r_list = recvs.get(channel, [])
            for s, r in zip(s_list, r_list, strict=False):
                if s.state == "completed" and r.state == "completed":
                    continue
                if posted(s) and posted(r):
                    assert isinstance(s.op, P2POp) and isinstance(r.op, P2POp)
                    if s.op.spec.nbytes > r.op.spec.nbytes:
                        if gloo:
                            raise Abort(f"recv of {r.op.spec} from rank {channel[0]} gets {s.op.spec}")
                        continue
                    finish([s, r])
                    moved = True
        return moved

    def release_cpus() -> bool:
        moved = False
        for rank in range(world):
            if cpu[rank] == "waiting" and all(u.done for u in stream[rank]):
                stream[rank].clear()
                clock[rank] = max(clock[rank], device_free[rank])
                cpu[rank] = "running"
                moved = True
            elif cpu[rank] == "sync" and all(u.done for u in stream[rank]):
                stream[rank].clear()
                clock[rank] = max(clock[rank], device_free[rank]) + SYNC_NS
                if pc[rank] < len(progs[rank]) and isinstance(progs[rank][pc[rank]], Sync):
                    pc[rank] += 1
                cpu[rank] = "running"
                moved = True
        return moved

    changed = True
    while changed:
        changed = False
        for rank in range(world):
            changed |= step_cpu(rank)
        changed |= start_heads()
        changed |= match_collectives()
        changed |= match_p2p()
        changed |= release_cpus()

    final: dict[int, str] = {}
    waiting: dict[int, str] = {}
    for rank in range(world):
        state = cpu[rank]
        if state in ("done", "stuck", "dead"):
            final[rank] = state
            if state != "done":
                waiting[rank] = f"{'dead' if state == 'dead' else 'stuck in compute'} before {stalled[rank].site}"
            continue
        final[rank] = "blocked"
        head = next((u for u in stream[rank] if not u.done), None)
        where = describe(head.item, gloo) if head is not None else "nothing"
        if gloo:
            waiting[rank] = where
        else:
            site = progs[rank][pc[rank]].site if pc[rank] < len(progs[rank]) else "the end of training"  # type: ignore[union-attr]
            waiting[rank] = f"host sync in {site}; device queue stopped at {where}"
    return Outcome(mode, entries, final, waiting, stalled, sorted(hung, key=lambda k: (int(k[0]), k[1])))


def _broadcast_done(v: int, n: int, here: set[int]) -> bool:
    """Whether virtual rank ``v`` (root 0) of gloo's binomial-tree broadcast over ``n`` ranks completes
    when the virtual ranks in ``here`` take part: it must receive (its whole path from the root is
    there) and every child it sends to must be there to receive."""
    u = v
    while u:
        if u not in here:
            return False
        u &= ~(1 << (u.bit_length() - 1))  # parent: clear the highest set bit
    if 0 not in here:
        return False
    children = [v + (1 << j) for j in range(v.bit_length(), max(1, (n - 1).bit_length()))]
    return all(c in here for c in children if c < n)


def _sizes_agree(ops: list[Coll], gloo: bool) -> bool:
    """Whether a collective whose members all issued the same op completes; raises Abort where gloo would."""
    first = ops[0]
    if first.op == "all_to_all":
        members = first.group.ranks
        by_rank = dict(zip(members, ops, strict=True))  # ops come in the group's rank order
        ok = True
        for i, src in enumerate(members):
            for j, dst in enumerate(members):
                a, b = by_rank[src], by_rank[dst]
                assert a.in_splits is not None and b.out_splits is not None
                sent, expected = a.in_splits[j], b.out_splits[i]
                if expected < sent:
                    if gloo:
                        raise Abort(f"all_to_all: rank {dst} expects {expected} rows from {src}, gets {sent}")
                    ok = False
                elif expected > sent:
                    ok = ok and gloo  # gloo completes it (the extra rows stay as they were); NCCL waits
        return ok
    sizes = {o.in_spec.nbytes for o in ops}
    if len(sizes) == 1:
        return True
    if gloo and 0 not in sizes:
        raise Abort(f"{first.op} in group {first.group.name} seq {first.seq} with byte counts {sorted(sizes)}")
    return False


def _gloo_reduce_scatter_shapes(op: Coll) -> None:
    """gloo's reduce_scatter_tensor checks ``output.shape[0] * group size == input.shape[0]`` and aborts."""
    n = len(op.group.ranks)
    if op.out_spec.shape[0] * n != op.in_spec.shape[0]:
        raise Abort(
            f"reduce_scatter in group {op.group.name} seq {op.seq}: input {op.in_spec.shape}, output {op.out_spec.shape}"
        )
