"""``flightdeck-dashboard``: which options go to Streamlit, which to the app, and the server
settings it carries (``dashboard/.streamlit/config.toml``)."""

from __future__ import annotations

import tomllib
from pathlib import Path

from dashboard.args import MAX_UPLOAD_FILE_MB, parse_args
from dashboard.launch import APP, CONFIG, command, split_args


def test_options_with_a_dot_go_to_streamlit_the_rest_to_the_app() -> None:
    streamlit, own = split_args(
        ["--dumps", "/d", "--server.port", "8502", "--theme.base=dark", "--dask", "local:2", "--", "--compare", "/e"]
    )
    assert streamlit == ["--server.port", "8502", "--theme.base=dark"]
    assert own == ["--dumps", "/d", "--dask", "local:2", "--compare", "/e"]
    args = parse_args(own)
    assert (args.dumps, args.dask, args.compare) == ("/d", "local:2", "/e")


def test_the_server_settings_sit_beside_the_app_where_streamlit_reads_them() -> None:
    """A script-level config file: Streamlit reads ``.streamlit/config.toml`` beside the
    script it runs, from any working folder (environment variables and flags win)."""
    from streamlit import config, file_util

    assert CONFIG == Path(file_util.get_main_script_streamlit_file_path(str(APP), "config.toml"))
    config._main_script_path = str(APP)
    try:
        assert str(CONFIG) in config.get_config_files("config.toml")
    finally:
        config._main_script_path = None
    settings = tomllib.loads(CONFIG.read_text())
    assert settings["server"]["address"] == "127.0.0.1", "local only unless asked"
    assert settings["server"]["maxUploadSize"] == MAX_UPLOAD_FILE_MB


def test_the_command_runs_the_installed_app_with_the_apps_options_last() -> None:
    cmd = command(["--dumps", "/d", "--server.port", "8502"])
    assert cmd[1:4] == ["-m", "streamlit", "run"] and Path(cmd[4]) == APP and APP.is_file()
    assert cmd[-3:] == ["--", "--dumps", "/d"]
    assert cmd.index("--server.port") < cmd.index("--")
