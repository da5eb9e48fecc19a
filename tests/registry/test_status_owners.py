"""Who reports Deployment status: the registry, unless a controller took it over."""

from __future__ import annotations

from minikcp.registry.status_owners import DeploymentStatusOwners


def test_the_registry_reports_until_a_namespace_is_handed_over() -> None:
    owners = DeploymentStatusOwners()
    assert owners.registry_reports("root", "default")
    owners.hand_over("root:org", "apps")
    assert not owners.registry_reports("root:org", "apps")
    # Only that namespace of that logical cluster.
    assert owners.registry_reports("root:org", "default")
    assert owners.registry_reports("root", "apps")
    owners.take_back("root:org", "apps")
    assert owners.registry_reports("root:org", "apps")
    owners.take_back("root:org", "apps")  # taking back twice is harmless


def test_handing_over_everywhere_wins() -> None:
    owners = DeploymentStatusOwners()
    owners.hand_over_everywhere()
    owners.take_back("root", "default")
    assert not owners.registry_reports("root", "default")
    assert not owners.registry_reports("any", "where")
