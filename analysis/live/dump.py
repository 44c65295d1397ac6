"""``dump_every(folder, seconds)``: a training script's Flight Recorder dumps on a timer.

Every rank writes ``<folder>/<snapshot>/rank_<global rank>`` at the same wall-clock ticks
(multiples of ``seconds`` since the epoch), so the ranks agree on the snapshot's folder
name without talking to each other. A file is written under a hidden name and renamed
into place: a reader never sees half of one. torch is imported only here, in the
training process, when the timer starts.
"""

from __future__ import annotations

import math
import os
import threading
import time
from pathlib import Path

__all__ = ["DumpTimer", "dump_every", "snapshot_name"]


def snapshot_name(tick: float) -> str:
    """The folder of the snapshot taken at ``tick`` (seconds since the epoch, UTC): sorts in time order."""
    ms = round(tick * 1000)
    return time.strftime("%Y%m%dT%H%M%S", time.gmtime(ms // 1000)) + f".{ms % 1000:03d}Z"


class DumpTimer:
    """The thread :func:`dump_every` started; :meth:`stop` ends it (it is a daemon either way)."""

    def __init__(self, folder: str | Path, seconds: float, rank: int | None = None) -> None:
        if not seconds > 0:
            raise ValueError("seconds must be more than 0")
        self.folder = Path(folder)
        self.seconds = float(seconds)
        self.rank = rank
        self.written = 0
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="flightdeck-dump-every", daemon=True)

    def start(self) -> DumpTimer:
        self._thread.start()
        return self

    def stop(self, timeout: float | None = None) -> None:
        """Stop after the dump in progress, if any."""
        self._stop.set()
        self._thread.join(timeout)

    def _run(self) -> None:
        import torch  # the training process has it; the analysis never imports it
        import torch.distributed as dist

        c10d = torch._C._distributed_c10d
        dump = getattr(c10d, "_dump_fr_trace", None) or c10d._dump_nccl_trace
        warm = False
        while True:
            now = time.time()
            tick = math.floor(now / self.seconds + 1) * self.seconds
            if self._stop.wait(max(0.0, tick - now)):
                return
            rank = self.rank
            if rank is None:
                if not (dist.is_available() and dist.is_initialized()):
                    continue  # before init_process_group: nothing recorded yet
                rank = dist.get_rank()
            if not warm:  # a process's first dump takes a second or more (torch sets up its
                warm = True  # stack symbolizer): not in a snapshot, whose ranks would write late
                dump()
                continue
            try:
                self._write(Path(self.folder, snapshot_name(tick)), rank, dump())
            except Exception as exc:  # noqa: BLE001 (a failed dump must never stop training)
                self.errors.append(f"{snapshot_name(tick)}: {exc}")
                del self.errors[:-10]

    def _write(self, where: Path, rank: int, data: bytes) -> None:
        where.mkdir(parents=True, exist_ok=True)
        part = where / f".rank_{rank}.part"
        part.write_bytes(data)
        os.replace(part, where / f"rank_{rank}")
        self.written += 1


def dump_every(folder: str | Path, seconds: float, rank: int | None = None) -> DumpTimer:
    """Dump this rank's Flight Recorder every ``seconds`` into ``folder/<snapshot>/rank_<rank>``.

    Call it once per rank, before or after ``init_process_group`` (``rank`` defaults to the
    global rank once the default group exists). Set ``TORCH_FR_BUFFER_SIZE`` (entries
    kept) before torch starts recording; without it Flight Recorder records nothing.
    Watch the folder with ``flightdeck watch FOLDER``.
    """
    return DumpTimer(folder, seconds, rank).start()
