"""``flightdeck mcp --root DIR``: the operations as MCP tools (the official Python SDK).

Over stdio by default (an agent starts the command); over streamable HTTP with ``--http``.
Every failure a caller can cause comes back as a tool error whose text names the path
and the reason; anything else as a tool error saying the analysis failed. The server
itself goes on.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Annotated, Any, TypeVar

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ToolAnnotations
from pydantic import Field

from .operations import ANSWERABLE, Operations

log = logging.getLogger(__name__)
T = TypeVar("T")

INSTRUCTIONS = (
    "Flight Deck diagnoses hung PyTorch jobs from Flight Recorder dumps (one file per rank). "
    "Paths are folders or files under the server's root, relative to it ('.' is the root). "
    "Start with analyze(path): the verdict, the root-cause (suspect) ranks, the wavefront "
    "(group and seq where progress diverged), the evidence and the hosts to drain. Then "
    "explain_rank for a suspect, group_states for the wavefront group, and compare for two "
    "snapshots of one job taken some time apart; watch_status(dir) for a running job whose "
    "snapshots arrive in dir (what `flightdeck watch` says of the newest one). A second question "
    "on the same dumps is answered from memory."
)
READ_ONLY = ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False)
PathArg = Annotated[str, Field(description="a folder (or one dump file) under the server's root, relative to it")]


def answer(call: Callable[[], T], what: str) -> T:
    """``call()``, with every failure turned into a tool error that says what went wrong."""
    try:
        return call()
    except ANSWERABLE as exc:
        raise ToolError(str(exc)) from None
    except Exception as exc:
        log.exception("analysis of %s failed", what)
        raise ToolError(
            f"{what}: the analysis failed ({type(exc).__name__}); the server's log has the details"
        ) from None


def build_server(ops: Operations) -> MCPServer:
    """An MCP server with the five tools on ``ops``."""
    server = MCPServer(name="flightdeck", instructions=INSTRUCTIONS)
    _add_dump_tools(server, ops)
    _add_snapshot_tools(server, ops)
    return server


def _add_dump_tools(server: MCPServer, ops: Operations) -> None:
    """The tools on one set of dumps: analyze, explain_rank, group_states."""

    @server.tool(annotations=READ_ONLY)
    def analyze(path: PathArg) -> dict[str, Any]:
        """The verdict on the dumps under `path`: the JSON report of `flightdeck PATH --json` (schema
        flightdeck.report/1): verdict (healthy|hang|mismatch), failure_class, suspect_ranks (the root
        cause), victim_ranks, wavefront {pg_name, pg_desc, collective_seq_id, op}, summary, evidence
        (sentences), confidence and caveats, rank_classes, process_groups, drain_hosts, file_errors."""
        return answer(lambda: ops.analyze(path), path)

    @server.tool(annotations=READ_ONLY)
    def explain_rank(path: PathArg, rank: Annotated[int, Field(description="a global rank", ge=0)]) -> dict[str, Any]:
        """One rank of the dumps under `path`: role (suspect|possible|victim|missing_dump|other),
        failure_class, rank_class, newest_entries (its newest Flight Recorder entries, newest first),
        stack (its call stack at the wavefront, else at its newest entry with one), stack_vs_majority
        (that stack line by line against the one most ranks had at the wavefront: side same|mine|
        majority), waits_on (the ranks it waits on, with group, seq and reason) and waited_on_by
        (who waits on it, per group and seq, with a count)."""
        return answer(lambda: ops.explain_rank(path, rank), path)

    @server.tool(annotations=READ_ONLY)
    def group_states(
        path: PathArg,
        group: Annotated[str, Field(description="the group's pg_name (as in the report), or its unique pg_desc")],
        max_seqs: Annotated[int, Field(description="newest sequence numbers shown", ge=1, le=1024)] = 64,
    ) -> dict[str, Any]:
        """The rank x seq states of one process group as a compact table: rows of ranks with the same
        states, one character per seq from seq_first to seq_last (legend: C completed, S started,
        Q scheduled, - not issued, . outside the ring buffer, M mismatched), and the wavefront_seq
        when the wavefront is in this group."""
        return answer(lambda: ops.group_states(path, group, max_seqs), path)


def _add_snapshot_tools(server: MCPServer, ops: Operations) -> None:
    """The tools on snapshots of one job taken apart in time: compare, watch_status."""

    @server.tool(annotations=READ_ONLY)
    def compare(
        earlier: Annotated[str, Field(description="the earlier snapshot's folder under the root")],
        later: Annotated[str, Field(description="the later snapshot's folder under the root")],
    ) -> dict[str, Any]:
        """Two snapshots of one job: the later one's report (as analyze) with `compare`: motion
        (hung|straggler|progressing), progressing_ranks, stalled_ranks, stuck_ranks, slow_ranks,
        interval_s and a summary sentence (dead or slow, and who)."""
        return answer(lambda: ops.compare(earlier, later), f"{earlier} -> {later}")

    @server.tool(annotations=READ_ONLY)
    def watch_status(
        dir: Annotated[str, Field(description="the folder under the root the running job's snapshots arrive in")],
        world: Annotated[
            int | None, Field(description="ranks 0..world-1 are expected (default: the highest rank seen)", ge=1)
        ] = None,
    ) -> dict[str, Any]:
        """A running job, from the Flight Recorder snapshots arriving in `dir` (one subfolder per
        snapshot, or dump files rewritten in place): `line` is what `flightdeck watch --json-lines`
        says of the newest complete snapshot against the complete one before it (schema
        flightdeck.watch/1: state baseline|progressing|slow|straggler|hung|unreadable, ranks (the
        stuck or slow ones), group, seq, op, missing_ranks, interval_s, message; report is null:
        call analyze on the snapshot for the full report); latest and previous (the snapshots
        compared), snapshots (the complete ones, oldest first), waiting (newer snapshots not
        complete yet and the ranks each still lacks). line is null while no snapshot is complete."""
        return answer(lambda: ops.watch_status(dir, world), dir)


def run(ops: Operations, http: bool = False, host: str = "127.0.0.1", port: int = 8766) -> None:
    """Serve until stdin closes (stdio) or the process is stopped (``http``: streamable HTTP at /mcp)."""
    server = build_server(ops)
    if http:
        server.run("streamable-http", host=host, port=port)
    else:
        server.run("stdio")
