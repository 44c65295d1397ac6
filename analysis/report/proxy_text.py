"""The proxy-op waits as text: the verdict of the waits alone, and the table of edges ``-v`` adds."""

from __future__ import annotations

from .report import Report
from .words import compact_ranks

EDGE_ROWS = 15


def _ms(ns: float) -> str:
    return f"{ns / 1e6:,.1f}"


def edges_table(report: Report, rows: int = EDGE_ROWS) -> list[str]:
    """The waiting edges, largest excess first."""
    pe = report.proxy_waits
    if pe is None or pe.waits.edges.empty:
        return []
    e = pe.waits.edges
    e = e.loc[e["waiting"]].sort_values("attributed_ns", ascending=False, kind="stable").head(rows)
    if e.empty:
        return []
    lines = [
        "",
        f"Proxy-op edges that waited (largest {len(e)}; ms per op: receive wait, sender's GPU / credit / send wait):",
        f"  {'sender':>7} -> {'receiver':<8} {'recv':>9} {'gpu':>9} {'credit':>9} {'send':>9}  class                root",
    ]
    for row in e.itertuples(index=False):
        root = "-" if row.root is None else f"{row.root.kind} {'->'.join(map(str, row.root_ranks))}"
        lines.append(
            f"  {row.sender:>7} -> {row.receiver:<8} {_ms(row.recv_op):>9} {_ms(row.gpu_op):>9} "
            f"{_ms(row.peerw_op):>9} {_ms(row.sendw_op):>9}  {row.cls:<20} {root}"
        )
    return lines


def render_proxy_text(report: Report, verbose: bool = False) -> str:
    """Without dumps: what the proxy-op waits show."""
    pe = report.proxy_waits
    if pe is None:
        return "No proxy-op waits were given."
    pw = pe.waits
    where = "global ranks" if pw.ranks_are_global else "communicator-local ranks"
    lines = [f"PROXY WAITS: {pw.finding.upper()}", ""]
    rows = [
        ("culprit ranks", compact_ranks(pw.culprit_ranks) or "none"),
        ("suspect links", ", ".join(f"{s}->{r}" for s, r in pw.suspect_links) or "none"),
        ("victim ranks", compact_ranks(pw.victim_ranks) or "none"),
        ("ranks", where),
        ("rows, comms", f"{len(pw.rows)} rows in the window, {len(pw.comms)} communicators"),
    ]
    width = max(len(k) for k, _ in rows)
    lines += [f"  {k.ljust(width)}  {v}" for k, v in rows]
    lines += ["", "Evidence:"] + [f"  - {e}" for e in report.evidence]
    if report.file_errors:
        lines += ["", f"Files not used ({len(report.file_errors)}):"]
        lines += [f"  - {e.file}: {e.error}" for e in report.file_errors[:50]]
    if verbose:
        lines += edges_table(report)
    return "\n".join(lines)
