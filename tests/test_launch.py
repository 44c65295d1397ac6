"""``flightdeck-dashboard``: which options go to Streamlit, which to the app, and the server
settings it carries (``dashboard/streamlit_config.toml``)."""

from __future__ import annotations

import tomllib
from pathlib import Path

from dashboard.args import parse_args
from dashboard.launch import APP, CONFIG, command, config_flags, split_args


def test_options_with_a_dot_go_to_streamlit_the_rest_to_the_app() -> None:
    streamlit, own = split_args(
        ["--dumps", "/d", "--server.port", "8502", "--theme.base=dark", "--dask", "local:2", "--", "--compare", "/e"]
    )
    assert streamlit == ["--server.port", "8502", "--theme.base=dark"]
    assert own == ["--dumps", "/d", "--dask", "local:2", "--compare", "/e"]
    args = parse_args(own)
    assert (args.dumps, args.dask, args.compare) == ("/d", "local:2", "/e")


def test_the_settings_file_becomes_options_the_users_own_win() -> None:
    settings = tomllib.loads(CONFIG.read_text())
    assert settings["server"]["address"] == "127.0.0.1", "local only unless asked"
    flags = config_flags(["--server.address", "0.0.0.0", "--theme.base=dark"])
    assert "--server.headless=true" in flags and "--server.maxUploadSize=256" in flags
    assert not any(f.startswith(("--server.address=", "--theme.base=")) for f in flags)


def test_the_command_runs_the_installed_app_with_the_apps_options_last() -> None:
    cmd = command(["--dumps", "/d", "--server.port", "8502"])
    assert cmd[1:4] == ["-m", "streamlit", "run"] and Path(cmd[4]) == APP and APP.is_file()
    assert cmd[-3:] == ["--", "--dumps", "/d"]
    assert cmd.index("--server.port") < cmd.index("--")
