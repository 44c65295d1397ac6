"""Flight Deck as an installed package, used as the README says: its commands from folders
outside the checkout, with no ``PYTHONPATH``; a wheel in a fresh venv; Dask clusters whose
processes have the package, have none, or have another build of it.

The fresh venvs install the versions ``requirements*.txt`` pin (as constraints), so pip
takes them from its cache when ``scripts/setup.sh`` has run.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
from dask_cluster import VENV_BIN, Cluster, clean_env, flightdeck_json
from locations import ROOT, SAMPLE_DUMPS

from analysis import analyze

pytestmark = pytest.mark.slow

SAMPLES = ["stuck_compute", "size_mismatch", "large_32_stuck"]
REQUIREMENTS = [ROOT / "requirements.txt", ROOT / "requirements-dask.txt"]
TIMEOUT_S = 600
"""A fresh venv installs several packages: generous, but a hang still fails."""


def run(cmd: Sequence[str | Path], cwd: Path, check: bool = True) -> subprocess.CompletedProcess[str]:
    """A command as a user's shell runs it: no ``PYTHONPATH``, in ``cwd``."""
    done = subprocess.run(
        [str(c) for c in cmd], check=False, cwd=cwd, env=clean_env(), capture_output=True, text=True, timeout=TIMEOUT_S
    )
    if check:
        assert done.returncode == 0, f"{cmd}: {done.stderr[-3000:]}"
    return done


def pins(folder: Path) -> Path:
    """The versions ``requirements*.txt`` pin, as a pip constraints file (which takes no extras)."""
    lines = [line.split("#")[0].strip() for req in REQUIREMENTS for line in req.read_text().splitlines()]
    pinned = [re.sub(r"\[.*?\]", "", line) for line in lines if "==" in line]
    path = folder / "constraints.txt"
    path.write_text("\n".join(pinned) + "\n")
    return path


def new_venv(folder: Path, *packages: str) -> Path:
    """A fresh venv with ``packages`` (pinned by the project's requirements); its bin folder."""
    run([sys.executable, "-m", "venv", folder], folder.parent)
    bin_folder = folder / "bin"
    install = [bin_folder / "python", "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    run([*install, "-c", pins(folder), *packages], folder)
    return bin_folder


def checkout_copy(folder: Path) -> Path:
    """The checkout's files as a clone has them (no venv, no build folder, no git)."""
    ignore = shutil.ignore_patterns(".git", ".venv", "artifacts", "build", "*.egg-info", "__pycache__", "*.so")
    shutil.copytree(ROOT, folder, ignore=ignore)
    return folder


def build_wheel(source: Path, out: Path) -> Path:
    """``pip wheel`` of ``source`` (a copy: the build leaves a ``build`` folder behind)."""
    out.mkdir(exist_ok=True)
    run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", source, "-w", out], out)
    (wheel,) = out.glob("flightdeck-*.whl")
    return wheel


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("wheel")
    return build_wheel(checkout_copy(folder / "source"), folder / "dist")


@pytest.fixture(scope="module")
def wheel_venv(tmp_path_factory: pytest.TempPathFactory, wheel: Path) -> Path:
    """``pip install flightdeck-*.whl[dask]`` into a fresh venv: its bin folder."""
    return new_venv(tmp_path_factory.mktemp("installed") / "venv", f"{wheel}[dask]")


@pytest.fixture(scope="module")
def dask_only_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A venv with Dask and without Flight Deck: a cluster set up with nothing else."""
    return new_venv(tmp_path_factory.mktemp("bare") / "venv", "dask[distributed]")


def test_the_commands_run_from_any_folder(tmp_path: Path) -> None:
    """``flightdeck`` and ``python -m analysis`` from a folder outside the checkout, in the venv
    ``scripts/setup.sh`` made: the report of the library itself."""
    folder = SAMPLE_DUMPS / "stuck_compute"
    expected = json.loads(json.dumps(analyze(folder, use_cache=False).to_dict()))
    assert flightdeck_json(VENV_BIN, folder, tmp_path) == expected
    done = run([VENV_BIN / "python", "-m", "analysis", folder, "--json", "--no-cache", "-q"], tmp_path, check=False)
    assert done.returncode == 1 and json.loads(done.stdout) == expected
    usage = run([VENV_BIN / "flightdeck", "--help"], tmp_path).stdout
    assert usage.startswith("usage: flightdeck ")


def test_a_wheel_in_a_fresh_venv_is_the_same_tool(wheel_venv: Path, tmp_path: Path) -> None:
    where = run([wheel_venv / "python", "-c", "import analysis; print(analysis.__file__)"], tmp_path).stdout
    assert Path(where.strip()).is_relative_to(wheel_venv.parent), "the wheel's copy, not the checkout's"
    native = run([VENV_BIN / "python", "-c", "import analysis.ingest._frscan"], tmp_path, check=False)
    if native.returncode == 0:  # the checkout has the native scanner: so must the wheel
        run([wheel_venv / "python", "-c", "import analysis.ingest._frscan"], tmp_path)
    for name in SAMPLES:
        assert flightdeck_json(wheel_venv, SAMPLE_DUMPS / name, tmp_path) == flightdeck_json(
            VENV_BIN, SAMPLE_DUMPS / name, tmp_path
        )
    listed = "from dashboard.sources import sample_scenarios; print(sample_scenarios())"
    assert (
        run([wheel_venv / "python", "-c", listed], tmp_path).stdout
        == run([VENV_BIN / "python", "-c", listed], tmp_path).stdout
    )


def test_the_installed_dashboard_serves_its_samples(wheel_venv: Path, tmp_path: Path) -> None:
    """``flightdeck-dashboard`` of the wheel, from another folder: the server answers, bound
    to 127.0.0.1 by the settings it carries (no ``.streamlit`` folder anywhere near)."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log = (tmp_path / "server.log").open("w")
    server = subprocess.Popen(
        [wheel_venv / "flightdeck-dashboard", "--server.port", str(port)],
        cwd=tmp_path,
        env=clean_env(),
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            assert server.poll() is None, (tmp_path / "server.log").read_text()[-2000:]
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=2) as r:
                    assert r.read().strip() == b"ok"
                    break
            except OSError:
                assert time.monotonic() < deadline, "the dashboard did not start"
                time.sleep(0.3)
        command = Path(f"/proc/{server.pid}/cmdline").read_bytes().split(b"\0")
        app = Path(next(c for c in command if c.endswith(b"app.py")).decode())
        assert app.is_relative_to(wheel_venv.parent), "the wheel's app"
        assert "127.0.0.1" in (app.parent / ".streamlit" / "config.toml").read_text()
        listening = Path("/proc/net/tcp").read_text().splitlines()
        local = [line.split()[1] for line in listening[1:] if line.split()[3] == "0A"]  # LISTEN
        assert f"0100007F:{port:04X}" in local, "bound to 127.0.0.1 by the settings the wheel carries"
    finally:
        server.terminate()
        server.wait(timeout=20)
        log.close()


@pytest.fixture()
def bare_cluster(dask_only_venv: Path, tmp_path: Path) -> Iterator[Cluster]:
    started = Cluster(tmp_path, workers=2, bin_folder=dask_only_venv)
    try:
        yield started
    finally:
        started.close()


def test_a_cluster_without_the_package_is_one_clear_error(bare_cluster: Cluster, tmp_path: Path) -> None:
    started = time.monotonic()
    done = run(
        [VENV_BIN / "flightdeck", SAMPLE_DUMPS / "large_32_stuck", "-q", "--no-cache", "--dask", bare_cluster.address],
        tmp_path,
        check=False,
    )
    assert done.returncode == 2
    assert time.monotonic() - started < 60
    # Dask may warn of the versions it sees differ (its own table); the error is one line.
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "rank_" not in done.stderr, "one error, not one per file: " + done.stderr[-2000:]
    (line,) = errors
    assert line.startswith(f"error: --dask {bare_cluster.address}: the scheduler and 2 workers (")
    assert "cannot run Flight Deck (flightdeck is not installed there)" in line
    assert "pip install flightdeck==0.1.0" in line


def test_a_cluster_of_the_same_wheel_works_and_of_another_build_is_refused(
    wheel_venv: Path, wheel: Path, tmp_path: Path
) -> None:
    """The wheel's venv as a cluster: the same reports as this machine's processes. Then the
    same version built from an edited copy of the checkout: refused, naming both builds."""
    folder = SAMPLE_DUMPS / "large_32_stuck"
    (tmp_path / "same").mkdir()
    same = Cluster(tmp_path / "same", workers=2, bin_folder=wheel_venv)
    try:
        assert flightdeck_json(VENV_BIN, folder, tmp_path, "--dask", same.address) == flightdeck_json(
            VENV_BIN, folder, tmp_path
        )
    finally:
        same.close()

    copy = checkout_copy(tmp_path / "edited")
    with (copy / "analysis" / "ingest" / "values.py").open("a") as f:
        f.write("# an edit: another build of the same version\n")
    edited = build_wheel(copy, tmp_path / "wheel2")
    pip = [wheel_venv / "python", "-m", "pip", "install", "-q", "--no-deps", "--force-reinstall"]
    run([*pip, edited], tmp_path)
    (tmp_path / "other").mkdir()
    other = Cluster(tmp_path / "other", workers=1, bin_folder=wheel_venv)
    try:
        done = run(
            [VENV_BIN / "flightdeck", folder, "-q", "--no-cache", "--dask", other.address], tmp_path, check=False
        )
    finally:
        other.close()
        run([*pip, wheel], tmp_path)  # the module's venv as it was
    assert done.returncode == 2
    (line,) = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert "another build of Flight Deck (flightdeck 0.1.0, reader " in line
    assert "runs on the scheduler and 1 worker (" in line
