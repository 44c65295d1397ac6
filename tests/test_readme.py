"""The README as a new user reads it: every example output reproduces, every page and picture it
links to is there, and its picture of the dashboard is one a README can carry."""

from __future__ import annotations

import re
import shlex
import struct
import subprocess
import sys

import pytest
from locations import ROOT

README = (ROOT / "README.md").read_text()
#: ```text blocks that start with a command line (``$ flightdeck ...``): the command, then its output.
EXAMPLES = [m.group(1) for m in re.finditer(r"```text\n(\$ flightdeck .*?)```", README, re.DOTALL)]


def test_the_readme_shows_an_example_output() -> None:
    assert EXAMPLES, "no ```text block starting with '$ flightdeck' in README.md"


@pytest.mark.parametrize("block", EXAMPLES, ids=[b.splitlines()[0] for b in EXAMPLES])
def test_every_example_output_reproduces(block: str) -> None:
    command, _, expected = block.partition("\n")
    argv = shlex.split(command.removeprefix("$ "))
    assert argv[0] == "flightdeck"
    done = subprocess.run(
        [sys.executable, "-m", "analysis", *argv[1:]],
        check=False,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.stdout == expected, f"README.md's output of `{command[2:]}` drifted; run it and paste what it prints"


def test_every_local_link_and_picture_is_there() -> None:
    targets = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", README)
    local = [t for t in targets if not re.match(r"[a-z]+://", t)]
    assert local
    missing = [t for t in local if not (ROOT / t).exists()]
    assert not missing, f"README.md links to {missing}"


def test_the_dashboard_picture_is_1440_px_wide_and_small() -> None:
    png = ROOT / "docs" / "images" / "dashboard.png"
    assert "(docs/images/dashboard.png)" in README
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, _height = struct.unpack(">II", data[16:24])
    assert width == 1440
    assert len(data) < 400 * 1024


def test_the_readme_is_a_guide_of_300_lines_at_most() -> None:
    lines = README.count("\n")
    assert lines <= 300, f"README.md has {lines} lines; move the long parts under docs/"


def test_the_layout_librarys_license_is_stated_as_installed() -> None:
    """docs/install.md names grandalf's version and license as the installed package's metadata gives them."""
    from importlib.metadata import metadata, version

    page = (ROOT / "docs" / "install.md").read_text()
    assert "(docs/install.md)" in README and "grandalf" in README
    assert f"**grandalf** ({version('grandalf')}, pinned in `requirements.txt`)" in page
    assert f"grandalf=={version('grandalf')}" in (ROOT / "requirements.txt").read_text()
    assert f"`License: {metadata('grandalf')['License']}`" in page
    either = " or ".join(metadata("grandalf")["License"].split(" | "))
    assert f"grandalf, is {either} at your choice" in README
