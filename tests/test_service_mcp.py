"""``flightdeck mcp --root DIR`` through the MCP SDK's own client over stdio: every tool, on
every sample set and on the shared NVRx sets, against ``flightdeck PATH --json``."""

from __future__ import annotations

import json
import socket
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from dask_cluster import clean_env
from locations import SAMPLE_DUMPS, SHARED_FIXTURES
from service_clients import FLIGHTDECK, cli_json, free_port, run_async

mcp = pytest.importorskip("mcp")
from mcp import Client, StdioServerParameters

NVRX = SHARED_FIXTURES / "nvrx"
SAMPLE_SETS = sorted(p.name for p in SAMPLE_DUMPS.iterdir() if p.is_dir() and not p.name.startswith("__"))


def sets_and_pairs(root: Path) -> tuple[list[str], list[tuple[str, str]]]:
    """The dump sets under ``root``, and (earlier, later) pairs: ``X.earlier`` and ``X``, ``X_1st`` and ``X_2nd``."""
    names = sorted(p.name for p in root.iterdir() if p.is_dir() and not p.name.startswith("__"))
    pairs = [(f"{n}.earlier", n) for n in names if f"{n}.earlier" in names]
    pairs += [
        (n, n.replace("_1st", "_2nd")) for n in names if n.endswith("_1st") and n.replace("_1st", "_2nd") in names
    ]
    return names, pairs


def server_params(root: Path) -> StdioServerParameters:
    """The server as an agent starts it: the venv's command, from another folder."""
    return StdioServerParameters(command=str(FLIGHTDECK), args=["mcp", "--root", str(root)], cwd="/", env=clean_env())


async def ask_everything(root: Path, names: list[str], pairs: list[tuple[str, str]]) -> tuple[list[str], list[Any]]:
    """One stdio session: the tools listed; analyze on every set, then explain_rank (its first suspect)
    and group_states (its wavefront group) on it, compare on every pair; and analyze once more."""
    async with Client(server_params(root), read_timeout_seconds=120) as client:
        tools = [t.name for t in (await client.list_tools()).tools]
        asked: list[tuple[str, dict[str, Any], Any]] = []

        async def call(name: str, args: dict[str, Any]) -> Any:
            result = await client.call_tool(name, args)
            asked.append((name, args, result))
            return result

        for n in names:
            report = (await call("analyze", {"path": n})).structured_content
            if report and report["ranks_loaded"]:
                await call(
                    "explain_rank", {"path": n, "rank": (report["suspect_ranks"] or report["victim_ranks"] or [0])[0]}
                )
                wave = report["wavefront"]
                await call("group_states", {"path": n, "group": (wave or report["process_groups"][0])["pg_name"]})
        for earlier, later in pairs:
            await call("compare", {"earlier": earlier, "later": later})
        await call("analyze", {"path": names[0]})  # from memory now
    return tools, asked


async def ask(root: Path, calls: list[tuple[str, dict[str, Any]]]) -> tuple[list[str], list[Any]]:
    """One stdio session with the server (started from another folder): the tools listed, and each call's result."""
    async with Client(server_params(root), read_timeout_seconds=120) as client:
        tools = [t.name for t in (await client.list_tools()).tools]
        results = [await client.call_tool(name, args) for name, args in calls]
        results.append(await client.call_tool("analyze", {"path": calls[0][1]["path"]}))  # from memory now
    return tools, results


def check_root(root: Path) -> None:
    names, pairs = sets_and_pairs(root)
    with ThreadPoolExecutor(2) as pool:  # the command line's answers, while the server is asked
        said = {n: pool.submit(cli_json, root / n) for n in names}
        said_compared = {p: pool.submit(cli_json, root / p[1], "--compare", str(root / p[0])) for p in pairs}
        tools, asked = run_async(ask_everything, root, names, pairs)
        truth = {
            "reports": {n: f.result() for n, f in said.items()},
            "compared": {p: f.result() for p, f in said_compared.items()},
        }
    assert sorted(tools) == ["analyze", "compare", "explain_rank", "group_states", "watch_status"]
    assert [name for name, _, _ in asked].count("analyze") == len(names) + 1
    assert [name for name, _, _ in asked].count("compare") == len(pairs)
    for name, args, result in asked:
        where = f"{name}({args})"
        if name == "analyze":
            expected = truth["reports"][args["path"]]
            assert not result.is_error, f"{where}: {result.content}"
            assert result.structured_content == expected, where  # the whole report, as the command line's JSON
            assert json.loads(result.content[0].text) == expected, where
        elif name == "compare":
            expected = truth["compared"][(args["earlier"], args["later"])]
            if isinstance(expected, str):  # the command line refused the pair: so does the tool, and says why
                assert result.is_error, where
                text = expected.removeprefix("error: ").replace(f"{root}/", "").replace("--compare ", "earlier ")
                assert text in result.content[0].text, where
            else:
                assert not result.is_error, f"{where}: {result.content}"
                assert result.structured_content["compare"] == expected["compare"], where
                assert result.structured_content["suspect_ranks"] == expected["suspect_ranks"], where
        elif name == "explain_rank":
            report = truth["reports"][args["path"]]
            got = result.structured_content
            assert not result.is_error, f"{where}: {result.content}"
            assert got["rank"] == args["rank"]
            assert (args["rank"] in report["suspect_ranks"]) == (got["role"] == "suspect"), where
            ids = [e["record_id"] for e in got["newest_entries"]]  # NVRx's onlyActive dumps may hold none
            assert ids == sorted(ids, reverse=True) and len(ids) <= 10, where
        else:
            got = result.structured_content
            assert not result.is_error, f"{where}: {result.content}"
            assert got["pg_name"] == args["group"]
            ranks = sorted(r for row in got["rows"] for r in row["ranks"])
            assert len(ranks) == got["ranks"], where
            width = got["seq_last"] - got["seq_first"] + 1 if got["seq_first"] is not None else 0
            assert all(len(row["states"]) == width for row in got["rows"]), where
    assert asked[-1][2].structured_content == asked[0][2].structured_content


@pytest.mark.slow
def test_every_tool_on_the_sample_sets_answers_as_the_command_line() -> None:
    check_root(SAMPLE_DUMPS)


@pytest.mark.skipif(not NVRX.is_dir(), reason="shared NVRx fixtures not present")
def test_every_tool_on_the_nvrx_sets_answers_as_the_command_line() -> None:
    check_root(NVRX)


def test_a_suspect_explained_and_its_group_shown() -> None:
    """stuck_compute: rank 5 never issued seq 11 of its tensor-parallel group; rank 4 waits on it there."""
    calls = [
        ("explain_rank", {"path": "stuck_compute", "rank": 5}),
        ("explain_rank", {"path": "stuck_compute", "rank": 4}),
        ("group_states", {"path": "stuck_compute", "group": "3"}),
        ("explain_rank", {"path": "stuck_compute", "rank": 99}),
        ("group_states", {"path": "stuck_compute", "group": "tensor_parallel"}),
        ("analyze", {"path": "../stuck_compute"}),
    ]
    _, (five, four, group, absent, ambiguous, outside, _again) = run_async(ask, SAMPLE_DUMPS, calls)
    five, four, group = five.structured_content, four.structured_content, group.structured_content
    assert five["role"] == "suspect" and five["failure_class"] == "missing_participant"
    assert [w["ranks"] for w in five["waited_on_by"] if w["seq"] == 11 and w["pg_name"] == "3"] == [[4]]
    assert four["role"] == "victim"
    assert any(w["rank"] == 5 and w["seq"] == 11 for w in four["waits_on"])
    assert four["stack"]["at_wavefront"] and four["stack"]["frames"]
    assert four["stack_vs_majority"]["majority_ranks"] >= 1
    assert {"ranks": [4], "states": "CCCCCCCCCCQ"} in group["rows"]
    assert {"ranks": [5], "states": "CCCCCCCCCC-"} in group["rows"]
    assert group["wavefront_seq"] == 11
    assert absent.is_error and "rank 99: not in these dumps" in absent.content[0].text
    assert ambiguous.is_error and "name one" in ambiguous.content[0].text
    assert outside.is_error and "refused" in outside.content[0].text and "outside the root" in outside.content[0].text


def test_streamable_http_with_the_flag(tmp_path: Path) -> None:
    """``flightdeck mcp --http``: the same tools at http://127.0.0.1:PORT/mcp."""
    port = free_port()
    with (tmp_path / "mcp.log").open("w") as log:
        proc = subprocess.Popen(
            [str(FLIGHTDECK), "mcp", "--http", "--root", str(SAMPLE_DUMPS), "--port", str(port)],
            cwd=tmp_path,
            env=clean_env(),
            stdout=log,
            stderr=subprocess.STDOUT,
        )

    async def ask_http() -> tuple[Any, Any]:
        async with Client(f"http://127.0.0.1:{port}/mcp", read_timeout_seconds=120) as client:
            return (
                await client.call_tool("analyze", {"path": "stuck_compute"}),
                await client.call_tool("analyze", {"path": "/etc"}),
            )

    try:
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None, (tmp_path / "mcp.log").read_text()[-3000:]
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert time.monotonic() < deadline, (tmp_path / "mcp.log").read_text()[-3000:]
                time.sleep(0.2)
        good, refused = run_async(ask_http)
        assert not good.is_error and good.structured_content["suspect_ranks"] == [5]
        assert refused.is_error and "/etc: refused: it resolves outside the root" in refused.content[0].text
        assert proc.poll() is None
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def test_the_readme_client_configuration_works_as_written() -> None:
    """The README's ``mcpServers`` block, its two placeholders filled in, starts a server that answers."""
    from locations import ROOT

    section = (ROOT / "README.md").read_text().split("## Agents and on-call tools (MCP, HTTP)")[1].split("\n## ")[0]
    block = section.split("```json\n")[1].split("```")[0]
    block = block.replace("/path/to/checkout", str(ROOT)).replace("/path/to/dumps", str(SAMPLE_DUMPS))
    entry = json.loads(block)["mcpServers"]["flightdeck"]

    async def ask_configured() -> Any:
        params = StdioServerParameters(command=entry["command"], args=entry["args"], cwd="/", env=clean_env())
        async with Client(params, read_timeout_seconds=120) as client:
            return await client.call_tool("analyze", {"path": "stuck_compute"})

    result = run_async(ask_configured)
    assert not result.is_error and result.structured_content["suspect_ranks"] == [5]
