"""The map step on a Dask cluster: one task per batch, results handed on in the batches' order.

``DaskEngine("tcp://host:8786")`` connects to a running scheduler; ``DaskEngine("local:4")``
starts a cluster of four single-threaded worker processes on this machine and closes it
when the load is done (with ``keep_local_cluster``, as the dashboard asks, the cluster is
started once per process and reused by every later load). Before the first task, the
scheduler and every worker are asked which build of Flight Deck they run
(:mod:`.cluster_check`): a cluster without the package, or with another build, is one
clear error, not one per file. Each batch is one task (:func:`load_batch` on the worker); the
driver fetches the parts in the batches' order, one at a time, so every engine builds the
same tables. Dask moves the tasks of a worker that dies to the others (and each task may
be tried once more); a task that still fails reports each of its files as a
:class:`FileError` with the reason, and the load goes on with the rest.

Large sets (more than ``scratch_threshold_bytes`` of dumps) with a ``scratch`` folder that
every worker and the driver see at the same path (NFS, say): the workers write their parts
there as Parquet and return only the folder's path; the driver reads each back when its
turn comes and deletes it, so the parts never pass through the scheduler.

Dask is imported only here, inside the functions, so the rest of Flight Deck works without it.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import threading
import time
import uuid
from collections.abc import Sequence
from concurrent.futures import CancelledError
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..types import DumpFile, FileError, FileTables, InputError, Limits, LoadCancelled
from .cluster_check import check_cluster
from .dask_local import local_cluster_options, parse_local, shared_local_cluster
from .mapstep import BatchResult, InOrder, OnResult, file_size, load_batch
from .parts import read_file_tables, write_file_tables
from .pool import Loader

if TYPE_CHECKING:
    from distributed import Client, Future

SCRATCH_THRESHOLD_BYTES = 256 << 20
"""Above this many bytes of dumps (and with a scratch folder) the parts go through the
scratch folder: 256 MiB of dumps make parts of a few tens of MiB, which the scheduler's
transfers handle well; far beyond it, a shared file system costs the driver less."""
CONNECT_TIMEOUT_S = 10.0
"""How long to wait for the scheduler, and for its first worker, before giving up."""
_POLL_S = 0.2
"""How often a wait looks at the cancel flag and the stall deadline."""
STALL_BASE_S = 120.0
STALL_BYTES_PER_S = 1 << 20
"""When no task has finished for this long (plus 1 s per MiB of the largest batch), the
tasks left are given up and their files reported: a cluster whose workers all died keeps
its tasks waiting for new workers, for ever."""

TaskResult = tuple[FileTables | str | None, list[FileError]]
"""A task's result: the part itself, or the path of its folder in the scratch folder."""


def dask_available() -> bool:
    """True where ``distributed`` can be imported (``requirements-dask.txt``)."""
    return importlib.util.find_spec("distributed") is not None


def map_task(loader: Loader, batch: Sequence[DumpFile], limits: Limits, folder: str | None) -> TaskResult:
    """One batch on a worker: its part (or, with ``folder``, the part stored there) and errors.

    A Dask worker runs tasks in threads, so process-wide limits stay as they are
    (``process_limits`` leaves them alone in a process with other threads)."""
    part, errors = loader(batch, limits)
    if folder is None or part is None:
        return part, errors
    if not os.path.isdir(os.path.dirname(folder)):  # the load was given up and its folder removed
        return None, errors
    return os.fspath(write_file_tables(part, folder)), errors


class DaskEngine:
    """The map step on a Dask cluster (see the module docstring)."""

    def __init__(
        self,
        address: str,
        scratch: str | os.PathLike[str] | None = None,
        scratch_threshold_bytes: int = SCRATCH_THRESHOLD_BYTES,
        loader: Loader = load_batch,
        stall_base_s: float = STALL_BASE_S,
        keep_local_cluster: bool = False,
    ) -> None:
        if not dask_available():
            raise InputError(
                "--dask needs Dask: pip install 'flightdeck[dask]' (in the checkout: pip install -r requirements-dask.txt)"
            )
        self.address = address
        self.local_workers = parse_local(address)
        self.scratch = None if scratch is None else os.fspath(scratch)
        self.scratch_threshold_bytes = scratch_threshold_bytes
        self.loader = loader
        self.stall_base_s = stall_base_s
        self.keep_local_cluster = keep_local_cluster

    def run(
        self,
        batches: Sequence[Sequence[DumpFile]],
        limits: Limits,
        on_result: OnResult,
        cancel: threading.Event | None = None,
    ) -> None:
        if not batches:
            return
        run_folder = self._run_folder(batches)
        try:
            client, cluster = self._connect()
            try:
                self._map(client, batches, limits, on_result, cancel, run_folder)
            finally:
                client.close()
                if cluster is not None:
                    cluster.close()
        finally:
            if run_folder is not None:
                shutil.rmtree(run_folder, ignore_errors=True)

    def _run_folder(self, batches: Sequence[Sequence[DumpFile]]) -> Path | None:
        """This load's folder in the scratch folder, when the set is large enough to use it."""
        if self.scratch is None:
            return None
        if sum(file_size(f.path) for batch in batches for f in batch) <= self.scratch_threshold_bytes:
            return None
        folder = Path(self.scratch) / f"flightdeck-{uuid.uuid4().hex}"
        try:
            folder.mkdir(parents=True)
        except OSError as exc:
            raise InputError(f"--dask-scratch {self.scratch}: cannot write there ({exc})") from exc
        return folder

    def _connect(self) -> tuple[Client, Any]:
        """A client of the scheduler at ``address``, or of a local cluster (started for this
        load, or this process's shared one); and the cluster to close after the load, if any."""
        from distributed import Client, LocalCluster

        if self.local_workers is not None and self.keep_local_cluster:
            return Client(shared_local_cluster(self.local_workers), set_as_default=False), None
        if self.local_workers is not None:
            cluster = LocalCluster(**local_cluster_options(self.local_workers))
            return Client(cluster, set_as_default=False), cluster
        try:
            client = Client(self.address, timeout=CONNECT_TIMEOUT_S, set_as_default=False)
        except (OSError, ValueError) as exc:  # refused, timed out, or not an address
            raise InputError(f"--dask {self.address}: cannot reach the Dask scheduler ({exc})") from exc
        try:
            client.wait_for_workers(1, timeout=CONNECT_TIMEOUT_S)
        except (OSError, TimeoutError) as exc:
            client.close()
            raise InputError(f"--dask {self.address}: the scheduler has no workers") from exc
        try:
            check_cluster(client, self.address)
        except BaseException:
            client.close()
            raise
        return client, None

    def _map(
        self,
        client: Client,
        batches: Sequence[Sequence[DumpFile]],
        limits: Limits,
        on_result: OnResult,
        cancel: threading.Event | None,
        run_folder: Path | None,
    ) -> None:
        submitted = self._submit(client, batches, limits, run_folder)
        stall_s = self.stall_base_s + max(sum(file_size(f.path) for f in b) for b in batches) / STALL_BYTES_PER_S

        def deliver(files: Sequence[DumpFile], future: Future | None) -> None:
            if future is None:
                why = f"its Dask task did not finish: no task finished for {stall_s:.0f} s"
                on_result(files, (None, [FileError(f.path, why) for f in files]))
                return
            on_result(files, _fetch(future, files))
            future.release()

        order: InOrder[Future | None] = InOrder(deliver)
        for index, batch in enumerate(batches):
            order.expect(index, len(batch))
        try:
            _collect(client, submitted, batches, order, cancel, stall_s)
        finally:
            client.cancel(list(submitted))

    def _submit(
        self, client: Client, batches: Sequence[Sequence[DumpFile]], limits: Limits, run_folder: Path | None
    ) -> dict[Future, int]:
        """One task per batch (with ``run_folder``, each writes its part to its own folder there)."""
        run = uuid.uuid4().hex[:12]
        submitted: dict[Future, int] = {}
        for index, batch in enumerate(batches):
            folder = None if run_folder is None else os.fspath(run_folder / str(index))
            future = client.submit(
                map_task,
                self.loader,
                list(batch),
                limits,
                folder,
                key=f"flightdeck-map-{run}-{index}",
                pure=False,
                retries=1,
            )
            submitted[future] = index
        return submitted


def _collect(
    client: Client,
    submitted: dict[Future, int],
    batches: Sequence[Sequence[DumpFile]],
    order: InOrder[Future | None],
    cancel: threading.Event | None,
    stall_s: float,
) -> None:
    """Hand each task on as it finishes; after ``stall_s`` without one, give up the rest."""
    from distributed import as_completed

    index_of = {future.key: index for future, index in submitted.items()}
    finished = as_completed(list(submitted), loop=client.loop, raise_errors=False)
    last_progress = time.monotonic()
    while not order.done():
        if cancel is not None and cancel.is_set():
            raise LoadCancelled("the load was cancelled")
        ready = finished.next_batch(block=False)
        if not ready and time.monotonic() - last_progress > stall_s:
            for index in order.missing():  # their tasks have not come back
                order.add(index, batches[index], None)
            return
        if not ready:
            with finished.thread_condition:
                finished.thread_condition.wait(timeout=_POLL_S)
            continue
        last_progress = time.monotonic()
        for future in ready:
            index = index_of[future.key]
            order.add(index, batches[index], future)


def _fetch(future: Future, files: Sequence[DumpFile]) -> BatchResult:
    """The batch's part and errors, or an error for each file when its task failed."""
    try:
        part, errors = future.result()
    except CancelledError:  # on the cluster (the scheduler went away, say)
        return None, [FileError(f.path, "its Dask task was cancelled on the cluster") for f in files]
    except Exception as exc:  # noqa: BLE001 - a lost task costs its files, not the load
        why = f"its Dask task failed: {type(exc).__name__}: {exc}"[:300]
        return None, [FileError(f.path, why) for f in files]
    if isinstance(part, str):
        try:
            return read_file_tables(part), errors
        except OSError as exc:  # the scratch folder is not shared with this machine, say
            why = f"its part could not be read from the scratch folder: {exc}"[:300]
            return None, [*errors, *(FileError(f.path, why) for f in files)]
        finally:
            shutil.rmtree(part, ignore_errors=True)
    return part, errors
