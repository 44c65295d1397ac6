"""Watching a running job: snapshots of its Flight Recorder dumps as they arrive.

    snapshots  which snapshot folders are complete (every rank's file there and stable)
    lines      one line per snapshot: progressing, slow, straggler or hung
    watch      the loop: find, analyse against the previous snapshot, print, stop at a hang
    dump       ``dump_every``: the training script's side, dumps on a timer
    follow     ``LiveWatch``: the watch stepped one poll at a time (the dashboard's live mode)

``from analysis.live import dump_every`` imports neither pandas nor the analysis.
"""

from __future__ import annotations

from .dump import DumpTimer, dump_every

__all__ = ["DumpTimer", "dump_every"]
