"""Imports done on a thread while the map step's workers read.

During the map step this process mostly waits for its workers, so the imports only its
later steps need (pandas and the analysis modules: about 0.4 s) are done then, on a
thread, instead of before the first file is handed out.

Two threads importing the same module wait for each other, so while the thread runs the
caller imports nothing new. That includes pyarrow's conversions: the first one imports
pandas (pyarrow's pandas shim), which would keep this process waiting with its workers
idle; ``load`` therefore holds the parts that arrive until the thread is done.
"""

from __future__ import annotations

import threading
from collections.abc import Callable


class BackgroundImports:
    """Runs ``work`` (a function that imports) on a daemon thread once started.

    :meth:`join` raises the thread's error in the caller's thread, and runs ``work`` right
    there if the thread was never started; either way ``work`` runs once."""

    def __init__(self, work: Callable[[], object]) -> None:
        self._work: Callable[[], object] | None = work
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="flightdeck-imports", daemon=True)

    def _run(self) -> None:
        try:
            self._take_work()()
        except BaseException as exc:  # noqa: BLE001 - raised again by join, in the caller's thread
            self._error = exc

    def _take_work(self) -> Callable[[], object]:
        work, self._work = self._work, None
        return work or (lambda: None)

    def start(self) -> BackgroundImports:
        self._thread.start()
        return self

    def done(self) -> bool:
        """No thread is importing now: it has ended, or was never started."""
        return not self._thread.is_alive()

    def join(self) -> None:
        """Wait for the imports (or do them now); an import that failed raises here."""
        if self._thread.ident is None:
            self._take_work()()
            return
        self._thread.join()
        if self._error is not None:
            error, self._error = self._error, None
            raise error
