"""Pickles that would run code under a plain ``pickle.load`` are refused, per file.

Every payload is first shown to be live: a plain ``pickle.load`` of it, in a child
process, creates a marker file. Then the analyzer reads a folder holding the payload
beside good dumps: the payload becomes a file error naming the file, the good ranks
are analyzed, and the marker is never created.
"""

from __future__ import annotations

import copyreg
import os
import pickle
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fr_versions import make_dump, write_dump

import analysis
from analysis.ingest.read import read_raw
from analysis.types import DumpReadError

MARKER = "pwned.marker"


def _s0(text: str) -> bytes:
    """Protocol 0 unicode argument: ``V`` + raw-unicode-escape + newline."""
    return b"V" + text.encode("raw-unicode-escape") + b"\n"


def _bs(text: str) -> bytes:
    """Protocol 2+ BINUNICODE."""
    data = text.encode()
    return b"X" + len(data).to_bytes(4, "little") + data


def _short(text: str) -> bytes:
    """Protocol 4 SHORT_BINUNICODE."""
    data = text.encode()
    return b"\x8c" + bytes([len(data)]) + data


def hand_built(marker: str) -> dict[str, bytes]:
    """Opcode-level payloads, one per code-running opcode family; each creates ``marker``."""
    touch = f"touch {marker}"
    py = f"open({marker!r}, 'w').close()"
    return {
        # protocol 0: GLOBAL + REDUCE
        "p0-GLOBAL-REDUCE-open": b"cbuiltins\nopen\n(" + _s0(marker) + _s0("w") + b"tR.",
        "p0-GLOBAL-REDUCE-os.system": b"cos\nsystem\n(" + _s0(touch) + b"tR.",
        "p0-GLOBAL-REDUCE-eval": b"cbuiltins\neval\n(" + _s0(py) + b"tR.",
        "p0-GLOBAL-REDUCE-exec": b"cbuiltins\nexec\n(" + _s0(py) + b"tR.",
        "p0-subprocess.Popen": b"csubprocess\nPopen\n((" + _s0("touch") + _s0(marker) + b"ltR.",
        "p0-getattr-chain": (
            b"cbuiltins\ngetattr\n(cbuiltins\n__import__\n("
            + _s0("os")
            + b"tR"
            + _s0("system")
            + b"tR("
            + _s0(touch)
            + b"tR."
        ),
        # protocol 0: INST (MARK args 'i' module name)
        "p0-INST": b"(" + _s0(marker) + _s0("w") + b"ibuiltins\nopen\n.",
        # protocol 1: OBJ (MARK callable args 'o')
        "p1-OBJ": b"(cbuiltins\nopen\n" + _s0(marker) + _s0("w") + b"o.",
        # BUILD: partial.__setstate__ swaps in open and its arguments, then a call
        "p1-BUILD": (
            b"cfunctools\npartial\n(cbuiltins\nprint\ntR(cbuiltins\nopen\n(" + _s0(marker) + _s0("w") + b"tNNtb)R."
        ),
        # protocol 2: NEWOBJ builds partial(open, marker, 'w') through cls.__new__
        "p2-NEWOBJ": (b"\x80\x02cfunctools\npartial\ncbuiltins\nopen\n" + _bs(marker) + _bs("w") + b"\x87\x81)R."),
        # protocol 4: STACK_GLOBAL, NEWOBJ_EX, FRAME-less
        "p4-STACK_GLOBAL": b"\x80\x04"
        + _short("builtins")
        + _short("open")
        + b"\x93"
        + _short(marker)
        + _short("w")
        + b"\x86R.",
        "p4-NEWOBJ_EX": (
            b"\x80\x04"
            + _short("functools")
            + _short("partial")
            + b"\x93"
            + _short("builtins")
            + _short("open")
            + b"\x93\x85}("
            + _short("file")
            + _short(marker)
            + _short("mode")
            + _short("w")
            + b"u\x92)R."
        ),
        # protocol 5: same through STACK_GLOBAL, with a bytearray and a frame marker in front
        "p5-STACK_GLOBAL": b"\x80\x05" + _short("os") + _short("system") + b"\x93" + _short(touch) + b"\x85R.",
        # EXT1/EXT2/EXT4: live only where the extension code is registered (done in the child)
        "p2-EXT1": b"\x80\x02\x82\xf0(" + _bs(marker) + _bs("w") + b"tR.",
        "p2-EXT2": b"\x80\x02\x83\xf0\x01(" + _bs(marker) + _bs("w") + b"tR.",
        "p2-EXT4": b"\x80\x02\x84\xf0\x01\x01\x00(" + _bs(marker) + _bs("w") + b"tR.",
    }


EXT_CODES = {"p2-EXT1": 0xF0, "p2-EXT2": 0x1F0, "p2-EXT4": 0x101F0}


class _Reduce:
    def __init__(self, func, args):
        self.func, self.args = func, args

    def __reduce__(self):
        return self.func, self.args


def via_reduce(marker: str) -> dict[str, bytes]:
    """Payloads written by pickle itself from objects with ``__reduce__``, protocols 0-5."""
    out = {}
    for proto in range(6):
        out[f"reduce-p{proto}-open"] = pickle.dumps(_Reduce(open, (marker, "w")), protocol=proto)
        out[f"reduce-p{proto}-os.system"] = pickle.dumps(_Reduce(os.system, (f"touch {marker}",)), protocol=proto)
        # A payload hidden inside an otherwise plausible dump.
        dump = make_dump("2.10", world_size=2)
        dump["pg_status"] = _Reduce(eval, (f"open({marker!r}, 'w').close() or {{}}",))
        out[f"reduce-p{proto}-inside-dump"] = pickle.dumps(dump, protocol=proto)
    return out


ALL = {**hand_built(MARKER), **via_reduce(MARKER)}

_LOAD_ALL = """
import copyreg, os, pickle, sys, time
codes = {codes!r}
live = []
for path in sys.argv[1:]:
    name = os.path.basename(path)
    if name in codes:
        copyreg._extension_registry.clear(); copyreg._inverted_registry.clear(); copyreg._extension_cache.clear()
        copyreg.add_extension("builtins", "open", codes[name])
    try:
        with open(path, "rb") as f:
            pickle.load(f)
    except Exception:
        pass
    for _ in range(50):  # Popen and os.system may finish a moment later
        if os.path.exists("{marker}"):
            break
        time.sleep(0.02)
    if os.path.exists("{marker}"):
        live.append(name)
        os.remove("{marker}")
print("\\n".join(live))
"""


@pytest.fixture(scope="module")
def payload_dir(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("payloads")
    for name, data in ALL.items():
        (d / name).write_bytes(data)
    return d


def test_every_payload_is_live_under_plain_pickle(payload_dir: Path, tmp_path: Path) -> None:
    """Prove the payloads are real: a plain pickle.load creates the marker for each."""
    script = _LOAD_ALL.format(codes=EXT_CODES, marker=MARKER)
    paths = [str(payload_dir / n) for n in ALL]
    cmd = [sys.executable, "-c", script, *paths]
    out = subprocess.run(cmd, check=False, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    live = set(out.stdout.split())
    assert live == set(ALL), f"not live: {sorted(set(ALL) - live)}\n{out.stderr[-2000:]}"


def _good_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "job"
    folder.mkdir()
    for r in (0, 2):
        write_dump(folder / f"rank_{r}", make_dump("2.10", world_size=3))
    return folder


@pytest.mark.parametrize("name", sorted(ALL))
def test_payload_refused_per_file(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = _good_folder(tmp_path)
    bad = folder / "rank_1"
    bad.write_bytes(ALL[name])
    monkeypatch.chdir(folder)  # the marker is relative: it would land here
    report = analysis.analyze(folder, workers=1)
    time.sleep(0.05)
    assert not (folder / MARKER).exists()
    errors = {e.file: e.error for e in report.file_errors}
    assert str(bad) in errors, report.file_errors
    assert any(w in errors[str(bad)] for w in ("unsafe", "refused", "extension", "corrupt")), errors[str(bad)]
    assert {0, 2} <= set(report.analysis.dumps.ranks)


@pytest.mark.parametrize("name", [n for n in sorted(ALL) if n not in EXT_CODES])
def test_refusal_names_the_callable(name: str, tmp_path: Path) -> None:
    path = tmp_path / "rank_0"
    path.write_bytes(ALL[name])
    with pytest.raises(DumpReadError, match="unsafe pickle, not loaded: refused to load"):
        read_raw(str(path))


@pytest.mark.parametrize("proto", [0, 2])
def test_persistent_ids_refused(proto: int, tmp_path: Path) -> None:
    # PERSID (protocol 0) and BINPERSID: torch.load-style loaders would hand them to code.
    data = b"P" + b"anything\n." if proto == 0 else b"\x80\x02" + _bs("anything") + b"Q."
    path = tmp_path / "rank_0"
    path.write_bytes(data)
    with pytest.raises(DumpReadError, match="persistent id"):
        read_raw(str(path))


def test_ext_refused_even_when_the_extension_cache_holds_a_callable(tmp_path: Path) -> None:
    """EXT* bypasses find_class once copyreg's cache holds the callable: still refused."""
    code = 0x7FFF_FFF0
    copyreg.add_extension("builtins", "open", code)
    try:
        pickle.loads(b"\x80\x02\x84" + code.to_bytes(4, "little") + b".")  # fills the process-wide cache
        path = tmp_path / "rank_0"
        marker = tmp_path / MARKER
        path.write_bytes(b"\x80\x02\x84" + code.to_bytes(4, "little") + b"(" + _bs(str(marker)) + _bs("w") + b"tR.")
        with pytest.raises(DumpReadError, match="extension code"):
            read_raw(str(path))
        assert not marker.exists()
    finally:
        copyreg.remove_extension("builtins", "open", code)


def test_gzipped_payload_refused(tmp_path: Path) -> None:
    import gzip

    folder = _good_folder(tmp_path)
    (folder / "rank_1.gz").write_bytes(gzip.compress(ALL["p0-GLOBAL-REDUCE-open"]))
    report = analysis.analyze(folder, workers=1)
    assert [e.file for e in report.file_errors] == [str(folder / "rank_1.gz")]
    assert "unsafe" in report.file_errors[0].error
    assert not (Path.cwd() / MARKER).exists()


def test_good_sample_set_with_payload_in_it(tmp_path: Path) -> None:
    """A real dump set (when present) with one rank replaced by a payload."""
    from fuzzing import seed_sets

    sets = seed_sets()
    if not sets:
        pytest.skip("no real dump sets present")
    name = min(sets)
    folder = tmp_path / "job"
    folder.mkdir()
    victim = min(sets[name])
    for r, p in sets[name].items():
        shutil.copy(p, folder / f"rank_{r}")
    (folder / f"rank_{victim}").write_bytes(ALL["p4-STACK_GLOBAL"])
    report = analysis.analyze(folder, workers=1)
    assert [e.file for e in report.file_errors] == [str(folder / f"rank_{victim}")]
    assert set(report.analysis.dumps.ranks) == set(sets[name]) - {victim}
