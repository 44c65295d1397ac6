"""Mutations shared by the fuzz tests and ``fuzz/run_fuzz.py``.

Seeds are real Flight Recorder dumps: the committed ``sample_dumps/*/rank_*`` sets,
the shared NCCL fixtures when present, and small gloo dumps written by real torch
(:func:`make_gloo_dumps`). Most mutations work on the decoded dict and re-serialize
it (pickle or JSON), so they get past the decoder and reach the parser and the
analysis; a smaller share works on the bytes (truncation, flips, gzip).
"""

from __future__ import annotations

import glob
import gzip
import io
import json
import os
import pickle
import random
import shutil
import subprocess
import sys
import textwrap
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from analysis import analyze, analyze_dumps
from analysis.ingest.parse import parse_dump
from analysis.ingest.process_limits import mark_worker_process
from analysis.ingest.read import read_raw
from analysis.tables.load import combine
from analysis.types import DumpFormatError, DumpReadError, FileError, Limits

ROOT = Path(__file__).resolve().parents[1]
SHARED_FIXTURES = ROOT.parent / "shared" / "fixtures"
SAMPLE_DUMPS = ROOT / "sample_dumps"


# ---------------------------------------------------------------------------- seeds


def seed_sets(extra_dirs: tuple[str | Path, ...] = ()) -> dict[str, dict[int, str]]:
    """Every available real dump set: name -> {rank: path}. Found by glob, never listed."""
    from analysis.ingest.discover import discover

    folders = sorted({os.path.dirname(p) for p in glob.glob(str(SAMPLE_DUMPS / "*" / "rank_*"))})
    folders += sorted({os.path.dirname(p) for p in glob.glob(str(SHARED_FIXTURES / "nvrx" / "*" / "_dump_*"))})
    folders += [str(d) for d in extra_dirs]
    sets: dict[str, dict[int, str]] = {}
    for folder in folders:
        files, _ = discover(folder)
        if files:
            sets[os.path.relpath(folder, ROOT.parent)] = {f.rank: f.path for f in files}
    return sets


def decode_sets(sets: dict[str, dict[int, str]]) -> dict[str, dict[int, dict]]:
    """Decode every seed file once (through the project's own safe reader)."""
    out: dict[str, dict[int, dict]] = {}
    for name, files in sets.items():
        decoded = {}
        for rank, path in files.items():
            try:
                raw, _ = read_raw(path)
            except DumpReadError:
                continue
            if type(raw) is dict:
                decoded[rank] = raw
        if decoded:
            out[name] = decoded
    return out


_GLOO_SCRIPT = textwrap.dedent(
    """
    import os, sys, datetime
    os.environ["TORCH_FR_BUFFER_SIZE"] = "100"
    import torch, torch.distributed as dist
    rank, world, store_path, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
    store = dist.FileStore(store_path, world)
    dist.init_process_group("gloo", store=store, rank=rank, world_size=world)
    half = world // 2
    tp = [dist.new_group(list(range(0, half)), group_desc="tp"), dist.new_group(list(range(half, world)), group_desc="tp")]
    g = tp[0] if rank < half else tp[1]
    x = torch.ones(4)
    dist.all_reduce(x)
    dist.all_reduce(x, group=g)
    dist.barrier()
    if rank != 1:  # rank 1 skips the last collective of its group: the others wait on it
        dist.all_reduce(x, group=g, async_op=True)
    if store.add("issued", 1) == world:
        store.set("go", "1")
    store.wait(["go"], datetime.timedelta(seconds=60))
    data = torch._C._distributed_c10d._dump_fr_trace()
    with open(os.path.join(out, f"rank_{rank}"), "wb") as f:
        f.write(data)
    if store.add("dumped", 1) == world:
        store.set("done", "1")
    store.wait(["done"], datetime.timedelta(seconds=60))
    os._exit(0)
    """
)


def make_gloo_dumps(out: str | Path, world: int = 4, timeout: float = 120.0) -> bool:
    """Write ``rank_0..rank_{world-1}`` from a real gloo job into ``out``; False without torch."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    script = out / "_gloo_job.py"
    script.write_text(_GLOO_SCRIPT)
    store = out / "_store"
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    procs = [
        subprocess.Popen(
            [sys.executable, str(script), str(r), str(world), str(store), str(out)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env=env,
        )
        for r in range(world)
    ]
    ok = True
    for p in procs:
        try:
            ok = p.wait(timeout) == 0 and ok
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
            ok = False
    script.unlink(missing_ok=True)
    store.unlink(missing_ok=True)
    return ok and all((out / f"rank_{r}").is_file() for r in range(world))


# ---------------------------------------------------------------------- hostile values


def deep_list(depth: int) -> list:
    x: list = []
    for _ in range(depth):
        x = [x]
    return x


def dag(depth: int, as_tuple: bool = False) -> Any:
    """A shared-reference DAG: ``depth`` levels, each holding the level below twice.

    Tiny in memory and in a pickle (the memo shares it), 2**depth leaves when walked.
    """
    x: Any = (1,) if as_tuple else [1]
    for _ in range(depth):
        x = (x, x) if as_tuple else [x, x]
    return x


def hostile_value(rng: random.Random) -> tuple[Any, bool]:
    """A value to put where a field belongs; the flag says it only fits a pickle."""
    pick = rng.randrange(24)
    table: list[tuple[Any, bool]] = [
        (None, False),
        ("", False),
        ("garbage", False),
        ("12345", False),
        (-1, False),
        (0, False),
        (2**63, False),
        (-(2**63) - 1, True),
        (2**200, True),
        (10**5000, True),
        (float("nan"), False),
        (float("inf"), False),
        (-1.5, False),
        (True, False),
        ([], False),
        ({}, False),
        ([[1, 2]], False),
        (["Float"], False),
        (("a", "b"), False),
        ("x" * rng.choice((100, 5000, 100_000)), False),
        (deep_list(rng.choice((50, 2000, 20_000))), True),
        (dag(rng.choice((20, 40))), True),
        (dag(rng.choice((20, 40)), as_tuple=True), True),
        ({"a": [None, {"b": 1.5}]}, False),
    ]
    return table[pick]


ENTRY_FIELDS = (
    "record_id",
    "pg_id",
    "process_group",
    "collective_seq_id",
    "p2p_seq_id",
    "op_id",
    "profiling_name",
    "time_created_ns",
    "input_sizes",
    "input_dtypes",
    "output_sizes",
    "output_dtypes",
    "state",
    "time_discovered_started_ns",
    "time_discovered_completed_ns",
    "retired",
    "timeout_ms",
    "is_p2p",
    "duration_ms",
    "frames",
    "thread_id",
    "thread_name",
)
_SPECIALS: dict[str, list[Any]] = {
    "collective_seq_id": [None, -1, -(2**63), 2**63 - 1, 2**62, "7"],
    "time_created_ns": [float("nan"), float("inf"), -(2**63), 2**63 - 1, 0, 1.5e18],
    "time_discovered_started_ns": [float("nan"), float("-inf"), 2**63 - 1],
    "time_discovered_completed_ns": [float("nan"), 0, -5],
    "state": ["scheduled", "started", "completed", "cancelled", None, ""],
    "profiling_name": ["nccl:send 0->999999999", "nccl:recv 3<-2", "gloo:all_reduce", "nccl:coalesced", ":", ""],
    "input_sizes": [[[2**62, 2**62]], [[-1]], [[]], [[1] * 64], [[1] * 65], [["1"]]],
    "process_group": [("0", "default_pg"), ["1", "tp"], "0", ("", ""), ("0",)],
    "frames": [[], [{"name": "f", "filename": "/x.py", "line": -1}], [{"name": "f"}], None],
    "is_p2p": [True, False, None, 1],
    "retired": [True, None, 0],
}


def _random_dict_path(rng: random.Random, raw: dict) -> dict | None:
    """A random dict inside a dump: the top level, an entry, a frame, a pg_config or pg_status value."""
    choices: list[Any] = [raw]
    entries = raw.get("entries")
    if type(entries) is list and entries:
        e = rng.choice(entries)
        if type(e) is dict:
            choices += [e, e]
            frames = e.get("frames")
            if type(frames) is list and frames and type(frames[0]) is dict:
                choices.append(rng.choice(frames))
    for key in ("pg_config", "pg_status"):
        v = raw.get(key)
        if type(v) is dict and v:
            inner = v[rng.choice(list(v))]
            choices += [v, inner] if type(inner) is dict else [v]
    return rng.choice(choices)


def mutate(rng: random.Random, raw: Any) -> tuple[Any, bool]:
    """Apply 1-3 structural mutations in place (or replace); returns (dump, pickle_only)."""
    pickle_only = False
    for _ in range(rng.choice((1, 1, 2, 3))):
        if type(raw) is not dict:
            break
        op = rng.randrange(12)
        entries = raw.get("entries")
        have_entries = type(entries) is list and entries and all(type(e) is dict for e in entries[:1])
        if op == 0:  # drop a key
            d = _random_dict_path(rng, raw)
            if d:
                d.pop(rng.choice(list(d)), None)
        elif op in (1, 2):  # retype a field
            d = _random_dict_path(rng, raw)
            if d is not None and d:
                value, only = hostile_value(rng)
                d[rng.choice(list(d))] = value
                pickle_only |= only
        elif op == 3 and have_entries and type(e := rng.choice(entries)) is dict:  # a special value
            field_name = rng.choice(list(_SPECIALS))
            e[field_name] = rng.choice(_SPECIALS[field_name])
        elif op == 4 and have_entries and type(e := rng.choice(entries)) is dict:  # a hostile value
            value, only = hostile_value(rng)
            e[rng.choice(ENTRY_FIELDS)] = value
            pickle_only |= only
        elif op == 5 and type(entries) is list:  # reshape the ring buffer
            how = rng.randrange(5)
            if how == 0:
                del entries[rng.randrange(len(entries) + 1) :]
            elif how == 1 and entries:
                entries.extend(
                    [dict(e) if type(e) is dict else e for e in entries[: rng.randrange(1, len(entries) + 1)]]
                )
            elif how == 2:
                rng.shuffle(entries)
            elif how == 3:
                entries.reverse()
            else:
                entries.clear()
        elif op == 6:  # nest a value deeply
            d = _random_dict_path(rng, raw)
            if d:
                k = rng.choice(list(d))
                v = d[k]
                for _ in range(rng.choice((3, 100, 5000))):
                    v = [v]
                d[k] = v
                pickle_only = True
        elif op == 7:  # mix versions and comm-version keys
            raw["version"] = rng.choice(["2.0", "2.4", "2.9", "2.10", "3.0", "", 2.4, None, "x" * 50])
            if "nccl_version" in raw and rng.random() < 0.5:
                raw["comm_lib_version"] = raw.pop("nccl_version")
        elif op == 8:  # group membership
            cfg = raw.get("pg_config")
            if type(cfg) is dict and cfg:
                v = cfg[rng.choice(list(cfg))]
                if type(v) is dict:
                    v["ranks"] = rng.choice(
                        ["[0, 99999999999]", "garbage", "[-1, 3]", [0, 1], "[]", "[0, 0, 0]", "[5000000]", [2**70]]
                    )
        elif op == 9:  # shared-reference DAG in a list field
            if have_entries and type(e := rng.choice(entries)) is dict:
                e[rng.choice(("input_sizes", "input_dtypes", "frames", "process_group"))] = dag(
                    40, as_tuple=rng.random() < 0.5
                )
                pickle_only = True
        elif op == 10:  # a top level that is not a dump
            value, only = hostile_value(rng)
            return value, only
        elif op == 11 and have_entries:  # one entry of another type
            entries[rng.randrange(len(entries))] = rng.choice([None, 1, "entry", [], ("a",)])
    return raw, pickle_only


# ------------------------------------------------------------------------ serializing


def serialize(rng: random.Random, raw: Any, pickle_only: bool) -> tuple[bytes, str]:
    """Pickle (any protocol; mostly 2 like torch) or JSON; returns (bytes, suffix)."""
    if not pickle_only and rng.random() < 0.3:
        try:
            if rng.random() < 0.2:  # stdlib JSON writes NaN/Infinity tokens
                return json.dumps(raw, allow_nan=True, default=list).encode(), ".json"
            return orjson.dumps(raw, option=orjson.OPT_NON_STR_KEYS), ".json"
        except (TypeError, ValueError, orjson.JSONEncodeError, RecursionError):
            pass
    proto = 2 if rng.random() < 0.7 else rng.randrange(6)
    try:
        return pickle.dumps(raw, protocol=proto), ""
    except (RecursionError, ValueError):  # protocol 0 prints ints; deep lists exceed the pickler's stack
        try:
            return pickle.dumps(raw, protocol=2), ""
        except RecursionError:
            return pickle.dumps(None, protocol=proto), ""


def mutate_bytes(rng: random.Random, data: bytes) -> bytes:
    op = rng.randrange(7)
    if op == 0 or not data:
        return data[: rng.randrange(len(data) + 1)]
    if op == 1:
        b = bytearray(data)
        for _ in range(rng.choice((1, 2, 8, 64))):
            b[rng.randrange(len(b))] = rng.randrange(256)
        return bytes(b)
    if op == 2:
        i = rng.randrange(len(data) + 1)
        return data[:i] + rng.randbytes(rng.randrange(1, 64)) + data[i:]
    if op == 3:
        return gzip.compress(data, compresslevel=1)
    if op == 4:
        z = gzip.compress(data, compresslevel=1)
        return z[: rng.randrange(len(z))]
    if op == 5:
        return rng.choice([b"", b"\x80", b"{", b"[", b"\x1f\x8b", b"(", b"}"]) + data
    return data + rng.randbytes(rng.randrange(1, 32))


def gzip_bomb(decompressed: int) -> bytes:
    """A gzip of a pickle string header followed by ``decompressed`` zero bytes."""
    out = io.BytesIO()
    with gzip.GzipFile(fileobj=out, mode="wb", compresslevel=9) as gz:
        gz.write(b"\x80\x02X\xf0\xff\xff\xff")  # a string of 4 GiB: the unpickler reads on
        chunk = bytes(1 << 20)
        left = decompressed
        while left > 0:
            gz.write(chunk[: min(left, len(chunk))])
            left -= len(chunk)
    return out.getvalue()


# ------------------------------------------------------------------------- one case

FUZZ_LIMITS = Limits(max_file_bytes=8 << 20)
"""Small enough that a gzip bomb of a few hundred KiB compressed is over it."""


@dataclass
class CaseResult:
    index: int
    ok: bool
    detail: str = ""
    mode: str = ""


class Fuzzer:
    """Deterministic cases from (seed, index) over the decoded seed dumps."""

    def __init__(self, seed: int, workdir: str | Path, gloo_dir: str | Path | None = None, file_share: float = 0.2):
        extra = (gloo_dir,) if gloo_dir else ()
        decoded = decode_sets(seed_sets(extra))
        if not decoded:
            raise RuntimeError("no seed dumps found")
        # Keep each seed as pickle bytes: pickle.loads is a fast deep copy.
        self.seeds = {name: {r: pickle.dumps(raw, 2) for r, raw in files.items()} for name, files in decoded.items()}
        self.names = sorted(self.seeds)
        self.seed = seed
        self.workdir = Path(workdir)
        self.file_share = file_share

    def _pick(self, rng: random.Random) -> tuple[str, list[int]]:
        name = rng.choice(self.names)
        ranks = sorted(self.seeds[name])
        k = min(len(ranks), rng.choice((1, 1, 2, 3, 4)))
        return name, sorted(rng.sample(ranks, k))

    def run(self, index: int) -> CaseResult:
        rng = random.Random(self.seed * 1_000_003 + index)
        mode = "files" if rng.random() < self.file_share else "memory"
        try:
            detail = self._files(rng) if mode == "files" else self._memory(rng)
        except Exception as exc:  # noqa: BLE001 - any escape is the finding
            tb = traceback.format_exc(limit=-4)
            return CaseResult(index, False, f"{type(exc).__name__}: {exc}"[:300] + "\n" + tb, mode)
        return CaseResult(index, detail is None, detail or "", mode)

    def _memory(self, rng: random.Random) -> str | None:
        name, ranks = self._pick(rng)
        bad = set(rng.sample(ranks, rng.randint(1, len(ranks))))
        parts, errors, good = [], [], []
        for r in ranks:
            raw = pickle.loads(self.seeds[name][r])
            if r in bad:
                raw, _ = mutate(rng, raw)
            else:
                good.append(r)
            try:
                parts.append(parse_dump(raw, r, f"rank_{r}", "pickle", FUZZ_LIMITS))
            except (DumpFormatError, RecursionError) as exc:
                errors.append(FileError(f"rank_{r}", str(exc)))
        report = analyze_dumps(combine(parts, errors))
        return _check(report, good, ranks)

    def _files(self, rng: random.Random) -> str | None:
        folder = self.workdir / "case"
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        name, ranks = self._pick(rng)
        bad = set(rng.sample(ranks, rng.randint(1, len(ranks))))
        good = []
        for r in ranks:
            raw = pickle.loads(self.seeds[name][r])
            if r not in bad:
                good.append(r)
                (folder / f"rank_{r}").write_bytes(self.seeds[name][r])
                continue
            how = rng.randrange(10)
            if how < 6:
                raw, only = mutate(rng, raw)
                data, suffix = serialize(rng, raw, only)
            else:
                data, suffix = serialize(rng, raw, False)
            if how >= 6 or rng.random() < 0.2:
                data = mutate_bytes(rng, data)
            if how == 9 and rng.random() < 0.3:
                data = gzip_bomb(FUZZ_LIMITS.max_file_bytes + (1 << 20))
            if rng.random() < 0.15:
                data = gzip.compress(data, compresslevel=1)
                suffix += ".gz"
            (folder / f"rank_{r}{suffix}").write_bytes(data)
        if good and rng.random() < 0.3:  # a second file claims a good rank
            r = rng.choice(good)
            raw, only = mutate(rng, pickle.loads(self.seeds[name][r]))
            data, _ = serialize(rng, raw, only)
            (folder / f"rank_{r}.json").write_bytes(data)
        report = analyze(folder, workers=1, limits=FUZZ_LIMITS)
        return _check(report, good, ranks)


def _check(report: Any, good: list[int], ranks: list[int]) -> str | None:
    loaded = set(report.analysis.dumps.ranks) if report.analysis is not None else set()
    missing = [r for r in good if r not in loaded]
    if missing:
        return f"good ranks {missing} not analyzed; file errors: {report.file_errors[:3]}"
    return None


# ------------------------------------------------------------- watchdog and driver


def _worker(seed: int, workdir: str, gloo_dir: str | None, file_share: float, conn: Any) -> None:
    mark_worker_process()  # this process only reads dumps: the address-space cap is its own
    fuzzer = Fuzzer(seed, workdir, gloo_dir, file_share)
    conn.send(("ready", None))
    while True:
        index = conn.recv()
        if index is None:
            return
        res = fuzzer.run(index)
        conn.send(("done", (res.index, res.ok, res.detail, res.mode)))


@dataclass
class FuzzSummary:
    cases: int = 0
    crashes: list[tuple[int, str]] = field(default_factory=list)
    hangs: list[int] = field(default_factory=list)
    modes: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0

    def line(self) -> str:
        return f"fuzz: {self.cases} cases, {len(self.crashes)} crashes, {len(self.hangs)} hangs"


def fuzz(
    cases: int,
    seed: int = 0,
    workers: int = 2,
    timeout: float = 20.0,
    file_share: float = 0.2,
    gloo_dir: str | Path | None = None,
    start_timeout: float = 120.0,
) -> FuzzSummary:
    """Run ``cases`` cases in ``workers`` child processes; a case over ``timeout`` s is a hang.

    A hung child is killed and replaced; its case is reported and the run goes on.
    """
    import multiprocessing
    import tempfile
    import time
    from multiprocessing.connection import wait

    ctx = multiprocessing.get_context("spawn")
    summary = FuzzSummary()
    t0 = time.monotonic()
    todo = list(range(cases))
    todo.reverse()
    with tempfile.TemporaryDirectory(prefix="fuzz-") as tmp:
        slots: dict[Any, dict] = {}

        def start(slot_id: int) -> None:
            parent, child = ctx.Pipe()
            wd = os.path.join(tmp, f"w{slot_id}-{time.monotonic_ns()}")
            args = (seed, wd, str(gloo_dir) if gloo_dir else None, file_share, child)
            proc = ctx.Process(target=_worker, args=args, daemon=True)
            proc.start()
            child.close()
            if not parent.poll(start_timeout):
                proc.kill()
                raise RuntimeError("fuzz worker did not start")
            parent.recv()
            slots[parent] = {"proc": proc, "index": None, "since": 0.0, "id": slot_id}

        def feed(conn: Any) -> None:
            slot = slots[conn]
            if todo:
                slot["index"] = todo.pop()
                slot["since"] = time.monotonic()
                conn.send(slot["index"])
            else:
                slot["index"] = None
                conn.send(None)

        for i in range(max(1, workers)):
            start(i)
        for conn in list(slots):
            feed(conn)
        while any(s["index"] is not None for s in slots.values()):
            busy = [c for c, s in slots.items() if s["index"] is not None]
            ready = wait(busy, timeout=1.0)
            for conn in ready:
                try:
                    _, (index, ok, detail, mode) = conn.recv()
                except EOFError:  # the child died (a crash of the interpreter itself)
                    slot = slots.pop(conn)
                    summary.cases += 1
                    summary.crashes.append((slot["index"], "worker process died"))
                    start(slot["id"])
                    feed(list(slots)[-1])
                    continue
                summary.cases += 1
                summary.modes[mode] = summary.modes.get(mode, 0) + 1
                if not ok:
                    summary.crashes.append((index, detail))
                feed(conn)
            now = time.monotonic()
            for conn, slot in list(slots.items()):
                if slot["index"] is not None and now - slot["since"] > timeout:
                    summary.cases += 1
                    summary.hangs.append(slot["index"])
                    slot["proc"].kill()
                    slot["proc"].join()
                    del slots[conn]
                    start(slot["id"])
                    feed(list(slots)[-1])
        for conn, slot in slots.items():
            slot["proc"].join(5)
    summary.seconds = time.monotonic() - t0
    return summary
