"""``flightdeck mcp --root DIR`` and ``flightdeck serve --root DIR``: the servers' command lines.

Their packages (mcp, fastapi, uvicorn) are the optional extra ``serve``; without them the
command says what to install instead of failing on an import.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from collections.abc import Sequence

from .paths import Refused, ServiceLimits

NEEDS = {"mcp": ("mcp",), "serve": ("fastapi", "uvicorn")}


def build_parser(command: str) -> argparse.ArgumentParser:
    what = "an MCP server (stdio; --http for streamable HTTP)" if command == "mcp" else "a read-only HTTP JSON API"
    p = argparse.ArgumentParser(
        prog=f"flightdeck {command}", description=f"Flight Deck's analyses as {what}, on dumps under --root only."
    )
    p.add_argument("--root", required=True, help="the only folder whose dumps may be read (symlinks out are refused)")
    if command == "mcp":
        p.add_argument("--http", action="store_true", help="streamable HTTP at http://HOST:PORT/mcp instead of stdio")
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1: this machine only)")
    p.add_argument("--port", type=int, default=8766 if command == "mcp" else 8765, help="(default %(default)s)")
    d = ServiceLimits()
    p.add_argument(
        "--max-files", type=int, default=d.max_files, help="files under a requested folder (default %(default)s)"
    )
    p.add_argument(
        "--max-mb", type=float, default=d.max_bytes / 2**20, help="MB of dumps one request reads (default %(default)s)"
    )
    p.add_argument(
        "--max-file-mb", type=float, default=d.max_file_bytes / 2**20, help="MB of one dump file (default %(default)s)"
    )
    p.add_argument(
        "--max-concurrent", type=int, default=d.max_concurrent, help="analyses at once (default %(default)s)"
    )
    p.add_argument(
        "--cached-reports", type=int, default=d.cached_reports, help="reports kept in memory (default %(default)s)"
    )
    return p


def missing(command: str) -> list[str]:
    return [name for name in NEEDS[command] if importlib.util.find_spec(name) is None]


def main(argv: Sequence[str]) -> int:
    """``argv[0]`` is ``mcp`` or ``serve``; returns the exit code."""
    command, rest = argv[0], list(argv[1:])
    args = build_parser(command).parse_args(rest)
    if lacking := missing(command):
        print(
            f"error: flightdeck {command} needs {', '.join(lacking)}: pip install 'flightdeck[serve]' "
            "(in the checkout: scripts/setup.sh --dev, or .venv/bin/pip install -e '.[serve]')",
            file=sys.stderr,
        )
        return 2
    limits = ServiceLimits(
        max_files=args.max_files,
        max_bytes=int(args.max_mb * 2**20),
        max_file_bytes=int(args.max_file_mb * 2**20),
        max_concurrent=args.max_concurrent,
        cached_reports=args.cached_reports,
    )
    from .operations import Operations

    try:
        ops = Operations(args.root, limits)
    except Refused as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.host not in ("127.0.0.1", "localhost", "::1"):
        print(
            f"note: serving on {args.host}: anyone who can reach it reads the dumps under {ops.root.path}",
            file=sys.stderr,
        )
    if command == "mcp":
        from .mcp_server import run as run_mcp

        run_mcp(ops, http=args.http, host=args.host, port=args.port)
    else:
        from .http_api import run as run_http

        print(
            f"Flight Deck API on http://{args.host}:{args.port} (root {ops.root.path}; schema /docs)", file=sys.stderr
        )
        run_http(ops, host=args.host, port=args.port)
    return 0
