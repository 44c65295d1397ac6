"""A real gloo job for ``flightdeck watch``: 8 ranks in tensor-parallel pairs and two
data-parallel groups, dumping Flight Recorder every INTERVAL seconds with
``analysis.live.dump_every``. The live tests and ``benchmarks.live_stop`` run it.

Run one process per rank (see :func:`start_job`). Rank CULPRIT goes wrong once AFTER
snapshots hold every rank's file, so the snapshots before are healthy and whole however
slowly the machine starts the job (a rank's first dump can take seconds on a loaded one). The faults that hang the job, each stamped by the culprit itself (the time,
in ``<out>.fault_at``, just before it goes wrong):

- ``stall``: it stops in "compute" (sleeps); the others block in their next collective with it;
- ``skip``: it skips the next barrier (every 10th step) the others issue, and blocks in its
  next tensor-parallel all_reduce, whose peer waits in that barrier;
- ``freeze``: the whole process stops (SIGSTOP, as a process the OS no longer runs): its
  dumps stop too, its sockets stay open and the others block.

Not hangs: ``slow`` makes it sleep 0.3 s every step from then on (it still moves);
``nodump`` stops its dumps then (it trains on); ``healthy`` changes nothing.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve()
HANGS = ("stall", "skip", "freeze")


def start_job(
    out: Path, world: int = 8, interval: float = 1.0, mode: str = "stall", culprit: int = 5, after: int = 4
) -> list[subprocess.Popen]:
    """Start the ranks; the caller stops them with :func:`stop_job` (they never end by themselves)."""
    out.mkdir(parents=True, exist_ok=True)
    store = out.parent / f"{out.name}.store"
    env = {**os.environ, "OMP_NUM_THREADS": "1", "TORCH_FR_BUFFER_SIZE": "200"}
    args = [str(world), str(store), str(out), str(interval), mode, str(culprit), str(after)]
    return [
        subprocess.Popen(
            [sys.executable, str(HERE), str(r), *args], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env
        )
        for r in range(world)
    ]


def stop_job(procs: list[subprocess.Popen]) -> None:
    """Kill every rank (a stopped one too: SIGKILL needs no SIGCONT) and reap it."""
    for p in procs:
        p.kill()
    for p in procs:
        p.wait()


def whole_snapshots(out: Path, world: int) -> int:
    """How many snapshot folders in ``out`` hold every rank's file."""
    try:
        folders = [f for f in os.scandir(out) if f.is_dir()]
    except FileNotFoundError:
        return 0
    return sum(all(os.path.exists(os.path.join(f.path, f"rank_{r}")) for r in range(world)) for f in folders)


def fault_time(out: Path) -> float | None:
    """When the culprit went wrong (seconds since the epoch), once it has."""
    stamp = out.parent / f"{out.name}.fault_at"
    return float(stamp.read_text()) if stamp.is_file() else None


def _rank_main(argv: list[str]) -> None:
    import datetime
    import time

    import torch
    import torch.distributed as dist

    from analysis.live import dump_every

    rank, world, store_path, out = int(argv[0]), int(argv[1]), argv[2], argv[3]
    interval, mode, culprit, after = float(argv[4]), argv[5], int(argv[6]), int(argv[7])
    stamp = Path(out).parent / f"{Path(out).name}.fault_at"
    timer = dump_every(out, interval)
    store = dist.FileStore(store_path, world)
    dist.init_process_group("gloo", store=store, rank=rank, world_size=world, timeout=datetime.timedelta(seconds=600))
    tp = [dist.new_group([r, r + 1], group_desc="tensor_parallel") for r in range(0, world, 2)]
    dp = [dist.new_group(list(range(i, world, 2)), group_desc="data_parallel") for i in range(2)]
    my_tp, my_dp = tp[rank // 2], dp[rank % 2]
    x = torch.ones(64)
    step = 0
    skipped = False
    wrong = False
    while True:
        wrong = wrong or (rank == culprit and timer.written >= after and whole_snapshots(Path(out), world) >= after)
        if wrong and mode == "stall":
            stamp.write_text(repr(time.time()))
            while True:
                time.sleep(3600)  # stuck in "compute"
        elif wrong and mode == "freeze":
            stamp.write_text(repr(time.time()))
            os.kill(os.getpid(), signal.SIGSTOP)
        elif wrong and mode == "slow":
            time.sleep(0.3)
        elif wrong and mode == "nodump" and not timer._stop.is_set():
            timer.stop()
        dist.all_reduce(x, group=my_tp)
        time.sleep(0.1)  # compute
        dist.all_reduce(x, group=my_dp)
        if step % 10 == 9:
            if wrong and mode == "skip" and not skipped:
                skipped = True
                stamp.write_text(repr(time.time()))
            else:
                dist.barrier()
        x.fill_(1.0)
        step += 1


if __name__ == "__main__":
    sys.path.insert(0, str(HERE.parents[1]))
    _rank_main(sys.argv[1:])
