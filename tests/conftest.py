"""Shared fixtures: one real minikcp server per test session; each test gets its own cluster."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from minikcp.registry import registry
from tests import in_process, server_process


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[server_process.ServerProcess]:
    proc = server_process.start_server(tmp_path_factory.mktemp("server"))
    yield proc
    code = proc.stop()
    assert code == 0, f"server exited with {code}:\n{proc.log()}"
    assert "Traceback" not in proc.log(), proc.log()


@pytest.fixture(scope="session")
def simulated_server(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[server_process.ServerProcess]:
    """A server acting as a physical cluster (`--simulate-workloads`), for tests of rollouts:
    without it nothing runs a workload's pods and its status says so."""
    proc = server_process.start_server(
        tmp_path_factory.mktemp("simulated"),
        extra_args=("--simulate-workloads", "--rollout-delay", "0.2"),
    )
    yield proc
    code = proc.stop()
    assert code == 0, f"server exited with {code}:\n{proc.log()}"
    assert "Traceback" not in proc.log(), proc.log()


@pytest.fixture
def cluster() -> str:
    """A fresh logical cluster name: tests never see each other's objects."""
    return f"t{uuid.uuid4().hex[:12]}"


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    return tmp_path


@pytest.fixture
async def reg(tmp_path: Path) -> AsyncIterator[registry.Registry]:
    """A real registry in the test's event loop (see tests/in_process.py); tests that need more
    running beside it define their own `reg` with `in_process.open_registry`."""
    async with in_process.open_registry(tmp_path) as opened:
        yield opened
