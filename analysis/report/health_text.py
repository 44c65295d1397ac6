"""``-c/--health-check``: the node health checks as a per-rank table.

Its content matches NVIDIA's analyzer (``fr_attribution.py``, ``print_node_health_status``):
per device the healthy and the unhealthy ranks, and with ``-v`` the outputs of the
checks. Unlike it, every rank gets a row (failed first), a device is listed even when no
rank passed its check, and a large healthy remainder is folded into one line.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..model.health import DEVICE_WORDS, RankHealth, failed_ranks
from .words import compact_ranks

MAX_HEALTHY_ROWS = 64
OUTPUT_CHARS = 600


def _listed(ranks: list[int]) -> str:
    """As NVIDIA prints a rank list (``[0, 1, 4]``), folded into ranges when long."""
    return str(sorted(ranks)) if len(ranks) <= MAX_HEALTHY_ROWS else f"[{compact_ranks(ranks, len(ranks))}]"


def _row(h: RankHealth) -> str:
    return f"  {h.rank:>6}  {h.gpu or '-':<12}  {h.nic or '-'}"


def _outputs(h: RankHealth) -> list[str]:
    lines = []
    for device, word in DEVICE_WORDS.items():
        text = (h.output(device) or "").strip()
        if not text:
            continue
        if len(text) > OUTPUT_CHARS:
            text = text[:OUTPUT_CHARS] + f"... ({len(text) - OUTPUT_CHARS} more characters)"
        lines += [f"          {word} output: {line}" for line in text.splitlines()]
    return lines


def render_health(health: Mapping[int, RankHealth], verbose: bool = False) -> str:
    """The table, then per device the healthy and unhealthy ranks (NVIDIA's lines)."""
    if not health:
        return "Node health checks: no dump carries them (the 'health_check_results' key NVIDIA's collector adds)."
    failed = [h for h in health.values() if h.failed or h.unreadable]
    passed = [h for h in health.values() if not (h.failed or h.unreadable)]
    lines = [f"Node health checks ({len(health)} ranks, {len(failed)} with a failed or unreadable check first):"]
    lines.append(f"  {'rank':>6}  {'GPU':<12}  NIC")
    for h in failed:
        lines.append(_row(h))
        if verbose:
            lines += _outputs(h)
    if len(passed) <= MAX_HEALTHY_ROWS:
        for h in passed:
            lines.append(_row(h))
            if verbose:
                lines += _outputs(h)
    else:
        lines.append(
            f"  ranks {compact_ranks([h.rank for h in passed], len(passed))}: every check as written 'Healthy'"
        )
    lines.append("")
    for device in DEVICE_WORDS:
        checked = [r for r, h in health.items() if h.status(device) is not None]
        bad = failed_ranks(dict(health), device)
        good = [r for r in checked if r not in bad and health[r].status(device) != "unreadable"]
        lines.append(f"  Healthy ranks {device}: {_listed(good)}")
        lines.append(f"  Unhealthy ranks {device}: {_listed(bad)}")
        if verbose:
            for r in bad:
                text = (health[r].output(device) or "").strip().replace("\n", " | ")
                lines.append(f"  Unhealthy, ({r}: {text[:OUTPUT_CHARS]})")
    return "\n".join(lines)
