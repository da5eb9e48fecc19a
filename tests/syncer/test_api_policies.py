"""API policies: how `minikcp attach --api-policy` is read, and which policy applies to a kind."""

from __future__ import annotations

import pytest

from minikcp.cli import attach
from minikcp.syncer import api_negotiation


@pytest.mark.parametrize(
    ("text", "policies"),
    [
        ("", {}),
        ("lcd", {"*": "lcd"}),
        ("widgets.example.com=pinned", {"widgets.example.com": "pinned"}),
        (
            "pinned, deployments.apps=lcd,configmaps=first",
            {"*": "pinned", "deployments.apps": "lcd", "configmaps": "first"},
        ),
    ],
)
def test_parse_api_policies(text: str, policies: dict[str, str]) -> None:
    assert attach.parse_api_policies(text) == policies


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("widest", "api policy 'widest': 'widest' is not one of first, lcd, pinned"),
        ("=lcd", "api policy '=lcd' names no resource"),
        ("deployments.apps=", "'' is not one of"),
    ],
)
def test_parse_api_policies_refuses(text: str, message: str) -> None:
    with pytest.raises(ValueError) as caught:
        attach.parse_api_policies(text)
    assert message in str(caught.value)


@pytest.mark.parametrize(
    ("policies", "resource", "policy"),
    [
        ({}, "deployments.apps", "first"),
        ({"*": "lcd"}, "deployments.apps", "lcd"),
        ({"*": "lcd", "deployments.apps": "pinned"}, "deployments.apps", "pinned"),
        ({"*": "lcd", "deployments.apps": "pinned"}, "services", "lcd"),
        ({"services": "pinned"}, "configmaps", "first"),
    ],
)
def test_policy_for(policies: dict[str, str], resource: str, policy: str) -> None:
    assert api_negotiation.policy_for(policies, resource) == policy


def test_attach_progress_names_the_fields_a_pinned_target_lacks() -> None:
    status = {
        "conditions": [
            {
                "type": api_negotiation.CONDITION,
                "status": "False",
                "reason": "IncompatibleSchema",
                "message": "widgets.example.com: pinned: the target lacks .spec.shape",
            }
        ]
    }
    assert attach.progress_lines(status) == [
        "schemas incompatible: widgets.example.com: pinned: the target lacks .spec.shape"
    ]
    accepted = {"conditions": [{"type": api_negotiation.CONDITION, "status": "True"}]}
    assert attach.progress_lines(accepted) == []
