"""Each rank's node health checks (GPU and NIC), as its dump recorded them."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from .. import schema as s
from ..ingest.health import UNREADABLE, status_is_failed
from ..types import DumpSet

DEVICE_WORDS = {"gpu": "GPU", "nic": "NIC"}


@dataclass(frozen=True, slots=True)
class RankHealth:
    """One rank's checks: statuses as written (None: that device was not checked)."""

    rank: int
    gpu: str | None
    nic: str | None
    gpu_output: str | None
    nic_output: str | None

    def status(self, device: str) -> str | None:
        return self.gpu if device == "gpu" else self.nic

    def output(self, device: str) -> str | None:
        return self.gpu_output if device == "gpu" else self.nic_output

    def failed_devices(self) -> list[str]:
        """Devices whose check failed ("gpu", "nic"), in that order."""
        return [d for d in DEVICE_WORDS if status_is_failed(self.status(d))]

    @property
    def failed(self) -> bool:
        return bool(self.failed_devices())

    @property
    def unreadable(self) -> bool:
        return UNREADABLE in (self.gpu, self.nic)


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def rank_health(files: pd.DataFrame) -> dict[int, RankHealth]:
    """Every rank whose dump carries the health checks, by rank (the dumps' ``files`` table)."""
    if files is None or s.GPU_HEALTH not in files.columns or files.empty:
        return {}
    cols = [s.RANK, s.GPU_HEALTH, s.NIC_HEALTH, s.GPU_HEALTH_OUTPUT, s.NIC_HEALTH_OUTPUT]
    out: dict[int, RankHealth] = {}
    for rank, gpu, nic, gpu_out, nic_out in files[cols].itertuples(index=False):
        gpu, nic = _text(gpu), _text(nic)
        if gpu is None and nic is None:
            continue
        out[int(rank)] = RankHealth(int(rank), gpu, nic, _text(gpu_out), _text(nic_out))
    return dict(sorted(out.items()))


def health_of(dumps: DumpSet) -> dict[int, RankHealth]:
    return rank_health(dumps.files)


def failed_ranks(health: dict[int, RankHealth], device: str) -> list[int]:
    """Ranks whose ``device`` check failed, sorted."""
    return [r for r, h in health.items() if device in h.failed_devices()]
