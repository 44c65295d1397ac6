"""The node health checks NVIDIA's trace collector adds to a dump, as four text fields.

nvidia-resiliency-ext's ``TorchFRTraceCollector.collect``
(``attribution/trace_analyzer/trace_collector.py``) unpickles torch's dump, adds one
top-level key and writes the dict again (pickle, or JSON with ``indent=4``)::

    health_check_results = {"gpu": {"status": "Healthy" | "Failed", "output": str},
                            "nic": {"status": "Healthy" | "Failed", "output": str}}

``output`` is the log text the check printed (free text, possibly empty or long). The
native scanner returns every top-level key but ``entries`` as Python objects, so both
read paths hand this function the same dict.

A malformed key never costs the dump its Flight Recorder data: the device's status
becomes :data:`UNREADABLE` and its output says what was wrong.
"""

from __future__ import annotations

from typing import Any

from .. import schema as s
from .values import describe

HEALTH_KEY = "health_check_results"
DEVICES = ("gpu", "nic")
UNREADABLE = "unreadable"
MAX_STATUS_CHARS = 64
MAX_OUTPUT_CHARS = 16_384
"""Kept per output: a check's log can be long; the report cuts it shorter still."""

COLUMNS = {
    "gpu": (s.GPU_HEALTH, s.GPU_HEALTH_OUTPUT),
    "nic": (s.NIC_HEALTH, s.NIC_HEALTH_OUTPUT),
}


def _cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"... ({len(text) - limit} more characters)"


def _device(results: dict, device: str) -> tuple[str | None, str | None]:
    """(status, output) of one device as written; (None, None) when the device is absent."""
    if device not in results:
        return None, None
    result = results[device]
    where = f"'{HEALTH_KEY}'['{device}']"
    if type(result) is not dict:
        return UNREADABLE, f"{where} is {describe(result)}, expected a dict"
    status, output = result.get("status"), result.get("output", "")
    if type(status) is not str:
        return UNREADABLE, f"{where}['status'] is {describe(status)}, expected a string"
    if output is None:
        output = ""
    if type(output) is not str:
        return _cut(status, MAX_STATUS_CHARS), f"{where}['output'] is {describe(output)}, expected a string"
    return _cut(status, MAX_STATUS_CHARS), _cut(output, MAX_OUTPUT_CHARS)


def health_fields(raw: dict) -> dict[str, str | None]:
    """The dump's health checks as ``{column: text or None}``; all None without the key."""
    fields: dict[str, str | None] = {col: None for pair in COLUMNS.values() for col in pair}
    if HEALTH_KEY not in raw:
        return fields
    results = raw[HEALTH_KEY]
    if type(results) is not dict:
        fields[s.GPU_HEALTH] = fields[s.NIC_HEALTH] = UNREADABLE
        fields[s.GPU_HEALTH_OUTPUT] = fields[s.NIC_HEALTH_OUTPUT] = (
            f"'{HEALTH_KEY}' is {describe(results)}, expected a dict"
        )
        return fields
    for device, (status_col, output_col) in COLUMNS.items():
        fields[status_col], fields[output_col] = _device(results, device)
    return fields


def status_is_failed(status: Any) -> bool:
    """As NVIDIA's analyzer reads a status: anything written but ``Healthy`` is unhealthy.

    An unreadable entry is not counted as a failure: nothing says the check failed.
    """
    return type(status) is str and status != UNREADABLE and status.strip().lower() != "healthy"
