"""``flightdeck-dashboard [--dumps DIR] [...]``: the dashboard's server, from any folder.

Runs ``streamlit run`` on this package's ``app.py``. Its server settings (local only,
upload limits, theme) are in ``.streamlit/config.toml`` beside ``app.py``, which Streamlit
reads for that script wherever it is started; environment variables (``STREAMLIT_...``) and
options with a dot (``--server.port 8502``, given to Streamlit) win over them. Every other
option is the app's own (see ``args``).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from .args import build_parser

APP = Path(__file__).resolve().with_name("app.py")
CONFIG = APP.parent / ".streamlit" / "config.toml"
"""The server settings Streamlit reads for ``app.py`` (a script-level config file)."""


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


def command(argv: Sequence[str]) -> list[str]:
    """The ``streamlit run`` command line for ``argv``."""
    streamlit, own = split_args(argv)
    return [sys.executable, "-m", "streamlit", "run", str(APP), *streamlit, "--", *own]


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
