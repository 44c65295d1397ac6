"""A real gloo job for the live tests: 8 ranks in tensor-parallel pairs and two data-parallel
groups, dumping Flight Recorder every INTERVAL seconds with ``analysis.live.dump_every``.

Run one process per rank (see :func:`start_job`). ``stall`` makes rank CULPRIT stop in
"compute" once it has written AFTER snapshots (it sleeps; the others block in their next
collective with it), so the snapshots before are healthy however slowly the machine starts
the job; ``slow`` makes it sleep 0.3 s every step from then on (it still moves);
``nodump`` stops its dumps then (it trains on); ``healthy`` changes nothing.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve()


def start_job(
    out: Path, world: int = 8, interval: float = 1.0, mode: str = "stall", culprit: int = 5, after: int = 4
) -> list[subprocess.Popen]:
    """Start the ranks; the caller kills them (they never end by themselves)."""
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
    for p in procs:
        p.kill()
    for p in procs:
        p.wait()


def _rank_main(argv: list[str]) -> None:
    import datetime
    import time

    import torch
    import torch.distributed as dist

    from analysis.live import dump_every

    rank, world, store_path, out = int(argv[0]), int(argv[1]), argv[2], argv[3]
    interval, mode, culprit, after = float(argv[4]), argv[5], int(argv[6]), int(argv[7])
    timer = dump_every(out, interval)
    store = dist.FileStore(store_path, world)
    dist.init_process_group("gloo", store=store, rank=rank, world_size=world, timeout=datetime.timedelta(seconds=600))
    tp = [dist.new_group([r, r + 1], group_desc="tensor_parallel") for r in range(0, world, 2)]
    dp = [dist.new_group(list(range(i, world, 2)), group_desc="data_parallel") for i in range(2)]
    my_tp, my_dp = tp[rank // 2], dp[rank % 2]
    x = torch.ones(64)
    step = 0
    while True:
        if rank == culprit and timer.written >= after:
            if mode == "stall":
                Path(out).parent.joinpath(f"{Path(out).name}.stalled_at").write_text(repr(time.time()))
                while True:
                    time.sleep(3600)  # stuck in "compute"
            elif mode == "slow":
                time.sleep(0.3)
            elif mode == "nodump" and not timer._stop.is_set():
                timer.stop()
        dist.all_reduce(x, group=my_tp)
        time.sleep(0.1)  # compute
        dist.all_reduce(x, group=my_dp)
        if step % 10 == 9:
            dist.barrier()
        x.fill_(1.0)
        step += 1


if __name__ == "__main__":
    sys.path.insert(0, str(HERE.parents[1]))
    _rank_main(sys.argv[1:])
