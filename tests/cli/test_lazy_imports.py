"""Client commands and `--help` load no server code (what `minikcp start` alone needs)."""

from __future__ import annotations

import subprocess
import sys

import pytest

_SERVER_MODULES = ("aiohttp", "prometheus_client", "jsonschema", "minikcp.registry", "minikcp.apis")

_PROBE = """
import sys
from minikcp.cli import main
try:
    main.main(sys.argv[1:])
except SystemExit:
    pass
print("loaded:" + ",".join(sorted(m for m in sys.modules if m.startswith({prefixes!r}))))
"""


@pytest.mark.parametrize(
    "argv",
    [["--help"], ["start", "--help"], ["attach", "--help"], ["dashboard", "--help"]],
)
def test_command_loads_no_server_modules(argv: list[str]) -> None:
    probe = _PROBE.format(prefixes=_SERVER_MODULES)
    result = subprocess.run(
        [sys.executable, "-c", probe, *argv], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip().splitlines()[-1] == "loaded:", " ".join(argv)


def test_ws_loads_no_server_modules() -> None:
    probe = (
        "import sys\nfrom minikcp.cli import ws\n"
        f"print(','.join(sorted(m for m in sys.modules if m.startswith({_SERVER_MODULES!r}))))"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == ""
