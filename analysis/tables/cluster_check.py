"""Before any work goes to a Dask cluster: does every process there run this Flight Deck?

A scheduler or worker without the package fails every task ("Error during deserialization
of the task graph"), one error per file; one running another build reads the dumps into
other tables. Both are found here once, before the first task, and reported as one
:class:`InputError` that names the processes, the cause and the fix.

The first probe is the standard library's own ``importlib.metadata.version``, which any
Python process can run; only processes that have the package are then asked for the digest
of the reader's code (the code the map step runs), which tells two builds of one version
apart (an edited checkout, say).
"""

from __future__ import annotations

import importlib.metadata
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..types import InputError
from .cache import loader_version

DISTRIBUTION = "flightdeck"
ANSWER_TIMEOUT_S = 60.0
"""How long the scheduler and the workers have to answer: a process that is there but does
not answer (stopped, or its event loop blocked) must not hold the load for ever."""


@dataclass(frozen=True, slots=True)
class Build:
    """What a process runs: the installed distribution's version, and the reader's code."""

    version: str | None
    reader: str

    def describe(self) -> str:
        return f"{DISTRIBUTION} {self.version or '(not installed)'}, reader {self.reader[:12]}"


def installed_version() -> str | None:
    """This process's version of the distribution; None when it runs from a bare checkout."""
    try:
        return importlib.metadata.version(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        return None


def this_build() -> Build:
    """What this process runs (also what a worker answers when asked)."""
    return Build(installed_version(), loader_version())


def check_cluster(client: Any, address: str, timeout_s: float = ANSWER_TIMEOUT_S) -> None:
    """Raise :class:`InputError` unless the scheduler and every worker run :func:`this_build`
    and answer within ``timeout_s``."""
    want = this_build()
    try:
        found = _ask(client, timeout_s, importlib.metadata.version, DISTRIBUTION)
        if not any(isinstance(got, BaseException) for got in found.values()):
            found = _ask(client, timeout_s, this_build)  # unpickling it imports the package there
    except TimeoutError as exc:
        raise InputError(
            f"--dask {address}: the scheduler or a worker did not answer within {timeout_s:.0f} s "
            "(stopped, or too busy): restart the cluster"
        ) from exc
    failed = sorted(name for name, got in found.items() if isinstance(got, BaseException))
    if failed:
        raise InputError(_without_package(address, failed, found, want))
    other = {name: got for name, got in found.items() if got != want}
    if other:
        raise InputError(_another_build(address, other, want))


def _ask(client: Any, timeout_s: float, function: Any, *args: Any) -> dict[str, object]:
    """``function(*args)`` on every worker (by address) and on the scheduler: answers or
    errors; :class:`TimeoutError` when they do not all answer within ``timeout_s``."""
    answers: dict[str, object] = dict(client.run(function, *args, on_error="return", callback_timeout=timeout_s))
    try:
        answers["the scheduler"] = client.run_on_scheduler(function, *args, callback_timeout=timeout_s)
    except TimeoutError:
        raise
    except Exception as exc:  # noqa: BLE001 - the probe's failure is the answer
        answers["the scheduler"] = exc
    return answers


def _without_package(address: str, names: list[str], answers: Mapping[str, object], want: Build) -> str:
    causes = sorted({_cause(answers[name]) for name in names})
    return (
        f"--dask {address}: {_listed(names)} cannot run Flight Deck ({'; '.join(causes)}). "
        f"The scheduler and every worker need the package this machine runs ({want.describe()}) "
        f"in their own Python environment: {_fix(want)}, then restart them."
    )


def _another_build(address: str, other: Mapping[str, object], want: Build) -> str:
    seen = sorted({got.describe() if isinstance(got, Build) else repr(got) for got in other.values()})
    return (
        f"--dask {address}: another build of Flight Deck ({'; '.join(seen)}) than this machine's "
        f"({want.describe()}) runs on {_listed(sorted(other))}; it would read the dumps into other "
        f"tables. Install the same build everywhere: {_fix(want)}, then restart them."
    )


def _cause(error: object) -> str:
    if isinstance(error, importlib.metadata.PackageNotFoundError):
        return f"{DISTRIBUTION} is not installed there"
    return f"{type(error).__name__}: {error}"[:200]


def _fix(want: Build) -> str:
    if want.version is None:
        return "pip install -e CHECKOUT (the same checkout as here)"
    return f"pip install {DISTRIBUTION}=={want.version} (or pip install -e CHECKOUT of the same commit)"


def _listed(names: list[str]) -> str:
    """``the scheduler and 2 workers (tcp://a, tcp://b)``."""
    workers = [name for name in names if name != "the scheduler"]
    parts = ["the scheduler"] if len(workers) < len(names) else []
    if workers:
        shown = ", ".join(workers[:4]) + (f" and {len(workers) - 4} more" if len(workers) > 4 else "")
        parts.append(f"{len(workers)} worker{'s' if len(workers) > 1 else ''} ({shown})")
    return " and ".join(parts)
