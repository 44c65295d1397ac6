"""Opt-in server timing of script runs, for ``benchmarks/dashboard.py``.

With ``FLIGHTDECK_TIMINGS=/path/runs.jsonl`` set for the server, every script run
appends one JSON line: when it started (``time.time()``), its wall time in ms
(``time.perf_counter()`` from the top of the run to its end), how it ended, and the
selection it ran for (before and after). Unset, a run only pays one environment lookup.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator, MutableMapping
from contextlib import contextmanager
from typing import Any

from . import state

ENV = "FLIGHTDECK_TIMINGS"


@contextmanager
def timed_run(ss: MutableMapping[str, Any], params: MutableMapping[str, Any]) -> Iterator[None]:
    path = os.environ.get(ENV)
    if not path:
        yield
        return
    started, t0 = time.time(), time.perf_counter()
    before = {"cell": ss.get(state.CELL), "query": dict(params)}
    ended = "done"
    try:
        yield
    except BaseException as exc:  # st.rerun / st.stop / an interrupted run end this way too
        ended = type(exc).__name__
        raise
    finally:
        ms = (time.perf_counter() - t0) * 1000
        record = {
            "start": started,
            "ms": round(ms, 2),
            "ended": ended,
            "before": before,
            "pg": ss.get(state.PG),
            "cell": ss.get(state.CELL),
            "window": ss.get(state.WINDOW),
            "tab": ss.get(state.TAB),
            "query": dict(params),
        }
        with open(path, "a", encoding="utf-8") as f:
            f.write(json.dumps(record, default=str) + "\n")
