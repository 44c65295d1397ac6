"""The postmortem export in Markdown: the text of ``report.markdown`` with its figures as
images beside it, in a folder (``flightdeck --markdown FILE``) or one zip (the dashboard).

``FILE`` and ``<stem>_figures/`` go side by side and the links are relative, so the pair
can be moved, zipped or pasted into a document together.
"""

from __future__ import annotations

import io
import tempfile
import zipfile
from pathlib import Path

from ..report.markdown import markdown_text
from ..report.report import Report
from .static import write_figures


def figures_dir(markdown_file: str | Path) -> Path:
    """Where the figures of ``report.md`` go: ``report_figures/`` beside it."""
    p = Path(markdown_file)
    return p.with_name(f"{p.stem}_figures")


def write_markdown(report: Report, path: str | Path, title: str = "Flight Deck report") -> list[Path]:
    """Write the Markdown to ``path`` and its figures (PNG and SVG) next to it; returns the paths."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    folder = figures_dir(path)
    pngs = write_figures(report, folder)
    links = {name: f"{folder.name}/{png.name}" for name, png in pngs.items()}
    path.write_text(markdown_text(report, links, title=title))
    return [path, *sorted(folder.iterdir())]


def markdown_zip(report: Report, title: str = "Flight Deck report", name: str = "flightdeck-report") -> bytes:
    """The same files as :func:`write_markdown` (``<name>.md`` and ``<name>_figures/``), as one zip."""
    buf = io.BytesIO()
    with tempfile.TemporaryDirectory() as tmp, zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        root = Path(tmp)
        for p in write_markdown(report, root / f"{name}.md", title=title):
            zf.write(p, p.relative_to(root).as_posix())
    return buf.getvalue()
