"""The command line starts its workers before pandas is imported, and imports it while they read.

``python -m analysis`` imports only what the map step needs before it hands out the first
batch; pandas and the analysis modules are imported on a thread meanwhile
(``tables.background``), and the parts that arrive in the meantime wait for it.
"""

from __future__ import annotations

import subprocess
import sys
import threading

import pytest
from locations import ROOT, SAMPLE_DUMPS

from analysis.tables.background import BackgroundImports
from analysis.tables.load import load
from analysis.tables.mapstep import Inline
from analysis.tables.pool import WorkerPool


def _fresh_python(code: str) -> str:
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120, check=True
    )
    return result.stdout.strip()


def test_the_command_line_and_the_loader_import_no_pandas() -> None:
    code = "import sys, analysis.cli, analysis.tables.load; print('pandas' in sys.modules)"
    assert _fresh_python(code) == "False"


def test_the_imports_run_on_their_thread_once_started() -> None:
    threads = []
    imports = BackgroundImports(lambda: threads.append(threading.current_thread())).start()
    imports.join()
    assert imports.done()
    assert threads and threads[0] is not threading.current_thread()


def test_never_started_they_run_in_the_joining_thread_once() -> None:
    calls = []
    imports = BackgroundImports(lambda: calls.append(threading.current_thread()))
    assert imports.done()  # nothing runs in the background: parts are folded in at once
    imports.join()
    imports.join()
    assert calls == [threading.current_thread()]


def test_an_import_that_fails_raises_in_the_joining_thread() -> None:
    def broken() -> None:
        raise ImportError("no such module")

    imports = BackgroundImports(broken).start()
    with pytest.raises(ImportError, match="no such module"):
        imports.join()


@pytest.mark.parametrize("sample", ["healthy", "op_mismatch"])
def test_the_tables_are_the_same_whether_the_imports_ran_beside_the_workers_or_not(sample: str) -> None:
    meanwhile_calls = []
    pooled = load(
        SAMPLE_DUMPS / sample, use_cache=False, engine=WorkerPool(2), meanwhile=lambda: meanwhile_calls.append(1)
    )
    inline = load(SAMPLE_DUMPS / sample, use_cache=False, engine=Inline())
    assert meanwhile_calls == [1]
    for name in ("entries", "stacks", "configs", "status", "files"):
        assert getattr(pooled, name).equals(getattr(inline, name)), name


def test_a_worker_reads_without_importing_pandas_and_may_still_import_it() -> None:
    """What the fork server preloads keeps pandas out of its workers' reading."""
    code = (
        "import sys\n"
        "from analysis.tables.worker_start import WORKER_IMPORTS\n"
        "for name in WORKER_IMPORTS: __import__(name)\n"
        "from analysis.ingest.discover import discover\n"
        "from analysis.tables.mapstep import load_batch\n"
        f"part, errors = load_batch(discover({str(SAMPLE_DUMPS / 'op_mismatch')!r}, None)[0])\n"
        "assert part is not None and not errors\n"
        "print('pandas' in sys.modules)\n"
        "import pyarrow as pa\n"
        "print(type(pa.table({'a': [1]}).to_pandas()).__name__)\n"
    )
    assert _fresh_python(code).split() == ["False", "DataFrame"]
