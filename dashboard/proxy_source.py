"""Which NCCL proxy-op waits to show beside a dump set (plain functions, no Streamlit).

``--proxy-ops PATH`` (or ``FLIGHTDECK_PROXY_OPS``) names them for every dump set; without
it, a ``proxy_ops`` folder inside the dump folder is used, if it lies under the allowed
roots like every dump read.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from .args import Args
from .confine import confine
from .sources import fingerprint

FOLDER = "proxy_ops"


def proxy_path(args: Args, dump_path: str, roots: Sequence[str]) -> str | None:
    if args.proxy_ops:
        return args.proxy_ops
    beside = os.path.join(dump_path, FOLDER)
    if os.path.isdir(dump_path) and os.path.isdir(beside):
        return confine(beside, roots)
    return None


def proxy_key(path: str | None) -> str:
    return "" if path is None else f"{path}@{fingerprint(path)}"
