"""Send/recv peers come from the profiling name, parsed once per distinct name."""

from __future__ import annotations

import pandas as pd

from analysis.opnames import peer_ranks


def test_peers_from_names() -> None:
    names = pd.Series(
        pd.Categorical(
            ["nccl:send 0->3", "nccl:recv 3<-0", "nccl:all_reduce", None, "nccl:send 0->3", "gloo:recv 1<-2"]
        ),
        index=[10, 11, 12, 13, 14, 15],
    )
    src, dst = peer_ranks(names)
    assert list(src.index) == list(names.index)
    assert src.tolist() == [0, 0, pd.NA, pd.NA, 0, 2]
    assert dst.tolist() == [3, 3, pd.NA, pd.NA, 3, 1]
