"""Client commands, `--help` and `version` load no server code (what `minikcp start` alone
needs); `--help` and `version` not even the client's HTTP and YAML."""

from __future__ import annotations

import subprocess
import sys

import pytest

_SERVER_MODULES = (
    "aiohttp", "prometheus_client", "jsonschema", "minikcp.registry", "minikcp.apis",
    "minikcp.server",
)  # fmt: skip
_CLIENT_MODULES = ("yaml", "urllib.request", "http.client", "minikcp.cli.ws_client")

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
    [["--help"], ["start", "--help"], ["attach", "--help"], ["dashboard", "--help"], ["version"]],
)
def test_command_loads_no_server_modules(argv: list[str]) -> None:
    probe = _PROBE.format(prefixes=_SERVER_MODULES)
    result = subprocess.run(
        [sys.executable, "-c", probe, *argv], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip().splitlines()[-1] == "loaded:", " ".join(argv)


@pytest.mark.parametrize("argv", [["--help"], ["version"]])
def test_help_and_version_load_no_client_modules(argv: list[str]) -> None:
    probe = _PROBE.format(prefixes=_CLIENT_MODULES)
    result = subprocess.run(
        [sys.executable, "-c", probe, *argv], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip().splitlines()[-1] == "loaded:", " ".join(argv)


def test_version_prints_what_the_server_serves() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "minikcp.cli.main", "version"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert result.stdout == "minikcp 0.1.0 (serving Kubernetes v1.32.0-minikcp)\n"
    assert result.stderr == ""


def test_ws_loads_no_server_modules() -> None:
    probe = (
        "import sys\nfrom minikcp.cli import ws\n"
        f"print(','.join(sorted(m for m in sys.modules if m.startswith({_SERVER_MODULES!r}))))"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == ""
