"""``flightdeck serve --root DIR``: the operations as a read-only HTTP JSON API (FastAPI, uvicorn).

GET only; the OpenAPI schema at ``/openapi.json``, its pages at ``/docs``. A refusal is a
403 (busy: 503), a rank or group not in the dumps a 404, dumps that cannot be used a
422, each as ``{"error": "..."}`` naming the path and the reason; an unexpected failure
a 500 that says the analysis failed. The server goes on in every case.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Annotated, Any

from fastapi import FastAPI, Query
from fastapi.responses import JSONResponse

from .memo import Busy
from .operations import InputError, NotInDumps, Operations, Refused

log = logging.getLogger(__name__)

PathQ = Annotated[str, Query(description="a folder (or one dump file) under the server's root, relative to it")]
Answer = dict[str, Any]


def respond(call: Callable[[], Answer], what: str) -> JSONResponse:
    """``call()``'s answer (JSON-ready already: sent as it is, not re-encoded by FastAPI), or
    the error response for what went wrong."""
    try:
        return JSONResponse(call())
    except Busy as exc:
        return JSONResponse({"error": str(exc)}, status_code=503)
    except Refused as exc:
        return JSONResponse({"error": str(exc)}, status_code=403)
    except NotInDumps as exc:
        return JSONResponse({"error": str(exc)}, status_code=404)
    except InputError as exc:
        return JSONResponse({"error": str(exc)}, status_code=422)
    except Exception as exc:
        log.exception("analysis of %s failed", what)
        text = f"{what}: the analysis failed ({type(exc).__name__}); the server's log has the details"
        return JSONResponse({"error": text}, status_code=500)


def build_app(ops: Operations) -> FastAPI:
    """The API on ``ops``. Plain ``def`` routes: FastAPI runs them on its worker threads."""
    app = FastAPI(
        title="Flight Deck",
        summary="Root-cause analysis of hung PyTorch jobs from Flight Recorder dumps (read-only).",
        version="1",
    )

    @app.get("/analyze", summary="The report on the dumps under path (flightdeck PATH --json)")
    def analyze(path: PathQ) -> Answer:
        return respond(lambda: ops.analyze(path), path)

    @app.get("/explain_rank", summary="One rank: newest entries, stack vs the majority's, waits")
    def explain_rank(path: PathQ, rank: Annotated[int, Query(ge=0, description="a global rank")]) -> Answer:
        return respond(lambda: ops.explain_rank(path, rank), path)

    @app.get("/group_states", summary="The rank x seq states of one process group, rows folded")
    def group_states(
        path: PathQ,
        group: Annotated[str, Query(description="pg_name, or a unique pg_desc")],
        max_seqs: Annotated[int, Query(ge=1, le=1024)] = 64,
    ) -> Answer:
        return respond(lambda: ops.group_states(path, group, max_seqs), path)

    @app.get("/compare", summary="Two snapshots of one job: the later report with who moved in between")
    def compare(
        earlier: Annotated[str, Query(description="the earlier snapshot's folder")],
        later: Annotated[str, Query(description="the later snapshot's folder")],
    ) -> Answer:
        return respond(lambda: ops.compare(earlier, later), f"{earlier} -> {later}")

    @app.get("/watch_status", summary="A running job: flightdeck watch's line for the newest complete snapshot")
    def watch_status(
        dir: Annotated[str, Query(description="the folder under the root the snapshots arrive in")],
        world: Annotated[int | None, Query(ge=1, description="ranks 0..world-1 are expected")] = None,
    ) -> Answer:
        return respond(lambda: ops.watch_status(dir, world), dir)

    @app.get("/health", summary="The server is up; its limits and cache counts")
    def health() -> Answer:
        lim = ops.limits
        return {
            "ok": True,
            "limits": {
                "max_files": lim.max_files,
                "max_bytes": lim.max_bytes,
                "max_file_bytes": lim.max_file_bytes,
                "max_concurrent": lim.max_concurrent,
            },
            "cache": {"hits": ops.memo.hits, "misses": ops.memo.misses},
            "watch_cache": {"hits": ops.lines.hits, "misses": ops.lines.misses},
        }

    return app


def run(ops: Operations, host: str = "127.0.0.1", port: int = 8765) -> None:
    """Serve until the process is stopped."""
    import uvicorn

    uvicorn.run(build_app(ops), host=host, port=port, log_level="info")
