"""Fixtures of the kubectl scenario suites: a kubectl bound to the test's logical cluster."""

from __future__ import annotations

import pytest

from tests.e2e.kubectl_runner import DEFAULT, OTHER_MINORS, Kubectl, versioned_binary
from tests.server_process import ServerProcess


@pytest.fixture
def kubectl(server: ServerProcess, cluster: str) -> Kubectl:
    """The default kubectl (1.32) in the test's own logical cluster."""
    return Kubectl(server, cluster)


@pytest.fixture
def simulated_kubectl(simulated_server: ServerProcess, cluster: str) -> Kubectl:
    """The default kubectl in the test's own logical cluster of a server that runs pods."""
    return Kubectl(simulated_server, cluster)


@pytest.fixture(params=("1.32", *OTHER_MINORS))
def any_kubectl(request: pytest.FixtureRequest, server: ServerProcess, cluster: str) -> Kubectl:
    """The key scenarios run with kubectl 1.32 (the default), 1.29 and 1.33."""
    minor = request.param
    if minor == "1.32":
        return Kubectl(server, cluster, DEFAULT)
    binary = versioned_binary(minor)
    if binary is None:
        pytest.skip(f"kubectl.{minor} is not installed")
    return Kubectl(server, cluster, binary)
