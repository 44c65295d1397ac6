"""``flightdeck-dashboard [--dumps DIR] [...]``: the dashboard's server, from any folder.

Runs ``streamlit run`` on this package's ``app.py`` with the server settings of
``streamlit_config.toml`` (local only, upload limits, theme), so the dashboard behaves the
same wherever it is started. Options with a dot (``--server.port 8502``) go to Streamlit and
win over those settings; every other option is the app's own (see ``args``).
"""

from __future__ import annotations

import os
import sys
import tomllib
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from .args import build_parser

APP = Path(__file__).resolve().with_name("app.py")
CONFIG = Path(__file__).resolve().with_name("streamlit_config.toml")


def split_args(argv: Sequence[str]) -> tuple[list[str], list[str]]:
    """Streamlit's options (``--section.name [value]``) and the app's own, in their order."""
    streamlit: list[str] = []
    own: list[str] = []
    items = list(argv)
    i = 0
    while i < len(items):
        arg = items[i]
        name = arg.split("=", 1)[0]
        if name.startswith("--") and "." in name:
            streamlit.append(arg)
            if "=" not in arg and i + 1 < len(items):
                streamlit.append(items[i + 1])
                i += 1
        elif arg != "--":  # ``streamlit run``'s separator, which this command does not need
            own.append(arg)
        i += 1
    return streamlit, own


def config_flags(given: Sequence[str], config: Path = CONFIG) -> list[str]:
    """The settings of ``config`` as Streamlit options, but for those ``given`` already sets."""
    taken = {arg.split("=", 1)[0] for arg in given if arg.startswith("--")}
    with config.open("rb") as f:
        settings = tomllib.load(f)
    flags = []
    for section, options in settings.items():
        for name, value in options.items():
            flag = f"--{section}.{name}"
            if flag not in taken:
                text = str(value).lower() if isinstance(value, bool) else str(value)
                flags.append(f"{flag}={text}")
    return flags


def command(argv: Sequence[str]) -> list[str]:
    """The ``streamlit run`` command line for ``argv``."""
    streamlit, own = split_args(argv)
    return [sys.executable, "-m", "streamlit", "run", str(APP), *config_flags(streamlit), *streamlit, "--", *own]


def main(argv: Sequence[str] | None = None) -> NoReturn:
    args = sys.argv[1:] if argv is None else list(argv)
    if "-h" in args or "--help" in args:
        build_parser(add_help=True).print_help()
        raise SystemExit(0)
    cmd = command(args)
    sys.stdout.flush()
    os.execv(cmd[0], cmd)


if __name__ == "__main__":
    main()
