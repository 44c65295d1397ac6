"""The dashboard reading on a Dask cluster, in a real browser: ``flightdeck-dashboard --dask
ADDRESS`` against a scheduler and two workers started from the venv's ``dask`` command in a
folder outside the checkout, with no ``PYTHONPATH``."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from harness import HEATMAP_PAINTED, REPO, SCRIPT_IDLE, screenshot

import analysis

pytest.importorskip("distributed")
sys.path.insert(0, str(REPO / "tests"))  # the test helpers beside this folder (this process only)
from dask_cluster import Cluster

pytestmark = pytest.mark.browser

APP = REPO / "dashboard" / "app.py"
LOADERS = REPO / "tests" / "dask_loaders.py"


@pytest.fixture()
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    (tmp_path / "cluster").mkdir()
    started = Cluster(tmp_path / "cluster", workers=2, preload=[LOADERS])
    try:
        yield started
    finally:
        started.close()


def test_the_dashboard_reads_on_a_cluster(serve, page, cluster: Cluster, monkeypatch, tmp_path: Path) -> None:
    from distributed import Client

    dumps = REPO / "sample_dumps" / "large_32_stuck"
    expected = analysis.analyze(dumps, use_cache=False)
    monkeypatch.setenv("FLIGHTDECK_CACHE_DIR", str(tmp_path / "cache"))  # nothing cached: the cluster reads
    server = serve(APP, "--dumps", str(dumps), "--dask", cluster.address)
    page.goto(server.url)
    page.wait_for_selector(HEATMAP_PAINTED, state="attached", timeout=120_000)
    page.wait_for_selector(SCRIPT_IDLE, state="attached", timeout=60_000)
    page.get_by_test_id("stMetricValue").get_by_text(expected.verdict.upper(), exact=True).wait_for()
    page.get_by_text(f"{expected.ranks_loaded} ranks ·", exact=False).first.wait_for(timeout=10_000)
    screenshot(page, "dashboard-dask.png")
    with Client(cluster.address, timeout=30, set_as_default=False) as client:
        from dask_loaders import map_seconds

        assert client.run_on_scheduler(map_seconds) > 0, "the map tasks ran on the cluster"
