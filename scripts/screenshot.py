"""The README's picture of the dashboard, taken from the running app in headless Chromium.

    .venv/bin/python scripts/screenshot.py [--url http://127.0.0.1:8501] [--scenario large_32_stuck]

Without ``--url`` it starts ``flightdeck-dashboard`` on a free port (the bundled samples) and
stops it after. Writes ``docs/images/dashboard.png`` (1440 px wide) unless ``--out`` says
otherwise. Run it again after a change to the page.
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from playwright.sync_api import sync_playwright

REPO = Path(__file__).resolve().parents[1]
CHROMIUM = os.environ.get("FLIGHTDECK_CHROMIUM", "/usr/bin/chromium")
SCRIPT_IDLE = '[data-testid="stApp"][data-test-script-state="notRunning"]'
HEATMAP_PAINTED = '[data-testid="stPlotlyChart"] .heatmaplayer image'


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_up(url: str, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url + "/_stcore/health", timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(0.5)
    raise SystemExit(f"the dashboard did not answer at {url} within {timeout:.0f} s")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--url", help="a running dashboard (default: start one)")
    ap.add_argument("--scenario", default="large_32_stuck", help="sample set to show")
    ap.add_argument("--out", type=Path, default=REPO / "docs" / "images" / "dashboard.png")
    ap.add_argument("--width", type=int, default=1440)
    ap.add_argument("--height", type=int, default=900)
    args = ap.parse_args(argv)

    server = None
    url = args.url
    if url is None:
        port = _free_port()
        url = f"http://127.0.0.1:{port}"
        exe = Path(sys.executable).with_name("flightdeck-dashboard")
        server = subprocess.Popen(
            [str(exe), "--server.port", str(port), "--server.headless", "true"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
    try:
        _wait_up(url)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
            page = browser.new_page(viewport={"width": args.width, "height": args.height})
            page.goto(f"{url}/?scenario={args.scenario}")
            page.wait_for_selector(HEATMAP_PAINTED, state="attached", timeout=180_000)
            page.wait_for_selector(SCRIPT_IDLE, state="attached", timeout=180_000)
            page.wait_for_timeout(1500)
            args.out.parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(args.out), full_page=False)
            browser.close()
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=30)
    print(f"{args.out} ({args.out.stat().st_size // 1024} KB)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
