"""The postmortem in Markdown: rendered by a real Markdown renderer, every image it links is a
real PNG beside it, and it names the same verdict, suspects and wavefront as the JSON report
(the reviewed golden JSON of each sample, and the CLI's own ``--json`` output)."""

from __future__ import annotations

import io
import json
import os
import shutil
import struct
import subprocess
import zipfile
from html.parser import HTMLParser
from pathlib import Path

import pytest
from locations import ROOT, SAMPLE_DUMPS, TESTS
from markdown_it import MarkdownIt

import analysis
from analysis.report.markdown import markdown_text
from analysis.views.postmortem import markdown_zip, write_markdown
from dashboard import sources

SAMPLES = sources.sample_scenarios(SAMPLE_DUMPS)
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


class Page(HTMLParser):
    """What a reader sees of the rendered Markdown: headings, table rows and images."""

    def __init__(self) -> None:
        super().__init__()
        self.images: list[str] = []
        self.rows: list[list[str]] = []
        self.headings: list[str] = []
        self.items: list[str] = []
        self.text: list[str] = []
        self._cell: list[str] | None = None
        self._heading: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "img":
            self.images.append(dict(attrs)["src"] or "")
        elif tag == "tr":
            self.rows.append([])
        elif tag in ("td", "th"):
            self._cell = []
        elif tag in ("h1", "h2", "li"):
            self._heading = []

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None:
            self.rows[-1].append("".join(self._cell).strip())
            self._cell = None
        elif tag in ("h1", "h2", "li") and self._heading is not None:
            (self.items if tag == "li" else self.headings).append("".join(self._heading).strip())
            self._heading = None

    def handle_data(self, data: str) -> None:
        self.text.append(data)
        for part in (self._cell, self._heading):
            if part is not None:
                part.append(data)

    def field(self, name: str) -> str:
        return next(row[1] for row in self.rows if row and row[0] == name)


def render(markdown: str) -> Page:
    page = Page()
    page.feed(MarkdownIt("commonmark").enable("table").render(markdown))
    return page


def ranks_of(text: str) -> list[int]:
    """``0-3, 7`` -> ``[0, 1, 2, 3, 7]``; ``none isolated`` -> ``[]``."""
    if not text[:1].isdigit():
        return []
    out: list[int] = []
    for part in text.split(", "):
        lo, _, hi = part.partition("-")
        out += range(int(lo), int(hi or lo) + 1)
    return out


def png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == PNG_MAGIC and data[12:16] == b"IHDR", f"{path} is not a PNG"
    return struct.unpack(">II", data[16:24])


def check_images(page: Page, folder: Path) -> None:
    """Every linked image is a relative path to a real, readable-sized PNG (SVG twin beside it)."""
    assert page.images, "the Markdown links no figure"
    for src in page.images:
        assert not Path(src).is_absolute() and ".." not in src, src
        path = folder / src
        width, height = png_size(path)
        assert 600 <= width <= 2400 and 300 <= height <= 2400, (src, width, height)
        assert path.stat().st_size > 5_000, "an empty figure"
        assert path.with_suffix(".svg").read_text().lstrip().startswith("<?xml")


def check_names_the_report(page: Page, expected: dict) -> None:
    """The verdict, failure class, suspects and wavefront the JSON report gives."""
    verdict = page.field("Verdict")
    assert verdict == f"{expected['verdict'].upper()} ({expected['failure_class']})"
    assert ranks_of(page.field("Suspect ranks")) == expected["suspect_ranks"]
    suspect_rows = [int(r[0]) for r in page.rows if len(r) == 6 and r[0].isdigit()]
    assert suspect_rows == expected["suspect_ranks"][:32], "one row per suspect in the Suspects table"
    drain = [i.split(" (")[0] for i in page.items if i.startswith(tuple(expected["drain_hosts"] or ["\0"]))]
    assert drain == expected["drain_hosts"], "the drain list, in the JSON's order"
    w = expected["wavefront"]
    if w is None:
        assert "Wavefront" not in page.headings
        return
    body = "".join(page.text)
    seq = "-" if w["collective_seq_id"] is None else w["collective_seq_id"]
    assert f"Group {w['pg_name']} ({w['pg_desc'] or 'no description'}, ranks" in body
    assert f"seq {seq}, {w['op'] or 'collective'}." in body


@pytest.mark.parametrize("scenario", SAMPLES)
def test_every_sample_renders_with_its_figures_and_names_the_suspects(tmp_path, scenario: str) -> None:
    report = analysis.analyze(SAMPLE_DUMPS / scenario, use_cache=False)
    out = tmp_path / "pm" / "report.md"
    written = write_markdown(report, out, title=f"Postmortem: {scenario}")
    page = render(out.read_text())
    assert page.headings[0] == f"Postmortem: {scenario}"
    check_images(page, out.parent)
    assert {p.name for p in written if p.suffix == ".png"} == {Path(s).name for s in page.images}
    golden = json.loads((TESTS / "golden" / f"{scenario}.json").read_text())
    check_names_the_report(page, golden)
    check_names_the_report(page, report.to_dict())
    if golden["wavefront"] is not None:
        assert "report_figures/wavefront.png" in page.images
    # One timeline row per rank class; the suspects' classes are the ones marked.
    timeline = [r for r in page.rows if len(r) == 5 and r[0].isdigit()]
    assert [int(r[0]) for r in timeline] == [c["id"] for c in golden["rank_classes"]]
    marked = {int(r[0]) for r in timeline if r[2] == "yes"}
    assert marked == {c["id"] for c in golden["rank_classes"] if c["suspect"]}


def test_text_from_the_dumps_cannot_break_the_markdown() -> None:
    report = analysis.analyze(SAMPLE_DUMPS / "stuck_compute")
    report.evidence = ["rank | 5 <script>x</script> # *bold* [link](http://x)"]
    page = render(markdown_text(report, title="a | b"))
    assert "rank | 5 <script>x</script> # *bold* [link](http://x)" in "".join(page.text)
    assert page.headings[0] == "a | b"


def test_the_dashboard_zip_holds_the_markdown_and_its_figures(tmp_path) -> None:
    report = analysis.analyze(SAMPLE_DUMPS / "large_32_stuck")
    with zipfile.ZipFile(io.BytesIO(markdown_zip(report, title="t"))) as zf:
        names = set(zf.namelist())
        zf.extractall(tmp_path)
    assert "flightdeck-report.md" in names
    assert {"flightdeck-report_figures/wavefront.png", "flightdeck-report_figures/timeline.svg"} <= names
    page = render((tmp_path / "flightdeck-report.md").read_text())
    check_images(page, tmp_path)
    assert ranks_of(page.field("Suspect ranks")) == report.suspect_ranks == [19]


def flightdeck(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    """The venv's command as a user runs it: from another folder, without PYTHONPATH."""
    exe = ROOT / ".venv" / "bin" / "flightdeck"
    if not exe.exists():
        exe = Path(shutil.which("flightdeck") or "flightdeck")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run([str(exe), *args], check=False, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def test_the_cli_writes_markdown_and_pngs_beside_its_json(tmp_path) -> None:
    dumps = SAMPLE_DUMPS / "two_culprits"
    done = flightdeck(
        str(dumps), "--json", "--markdown", "post/mortem.md", "--png", "figs", "--ranks-per-node", "4", cwd=tmp_path
    )
    assert done.returncode == 1, done.stderr
    expected = json.loads(done.stdout)
    page = render((tmp_path / "post" / "mortem.md").read_text())
    assert all(src.startswith("mortem_figures/") for src in page.images)
    check_images(page, tmp_path / "post")
    check_names_the_report(page, expected)
    assert expected["suspect_ranks"] == [5, 6] and expected["drain_hosts"] == ["node1"]
    for name in ("wavefront", "timeline"):
        png_size(tmp_path / "figs" / f"{name}.png")
        assert (tmp_path / "figs" / f"{name}.svg").exists()


def test_the_cli_text_output_is_unchanged_with_png(tmp_path) -> None:
    dumps = SAMPLE_DUMPS / "stuck_compute"
    plain = flightdeck(str(dumps), "-q", cwd=tmp_path)
    with_png = flightdeck(str(dumps), "-q", "--png", "figs", cwd=tmp_path)
    assert with_png.returncode == plain.returncode == 1
    assert with_png.stdout == plain.stdout and "VERDICT: HANG" in plain.stdout
    assert sorted(p.name for p in (tmp_path / "figs").iterdir()) == [
        "timeline.png",
        "timeline.svg",
        "wavefront.png",
        "wavefront.svg",
    ]


def test_the_export_tab_offers_the_markdown_beside_the_html(monkeypatch) -> None:
    from streamlit.testing.v1 import AppTest

    from dashboard import state

    monkeypatch.setattr("sys.argv", [str(ROOT / "dashboard" / "app.py"), "--samples", str(SAMPLE_DUMPS)])
    at = AppTest.from_file(str(ROOT / "dashboard" / "app.py"), default_timeout=60)
    at.query_params["scenario"] = "stuck_compute"
    at.run()
    at.session_state[state.TAB] = "Export"
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    labels = [b.proto.label for b in at.get("download_button")]
    assert labels[:2] == ["HTML report (opens offline)", "Markdown with figures (zip)"]
