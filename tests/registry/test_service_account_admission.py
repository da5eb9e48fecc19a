"""The ServiceAccount admission's pure parts: automount choice and the token volume's mounts."""

from __future__ import annotations

from typing import Any

import pytest

from minikcp.registry import service_account_admission as sa

MOUNT = {"name": "kube-api-access-abcde", "readOnly": True, "mountPath": sa.MOUNT_PATH}
OWN = {"name": "x", "mountPath": sa.MOUNT_PATH}


@pytest.mark.parametrize(
    ("pod", "account", "want"),
    [
        ({}, {}, True),
        ({}, {"automountServiceAccountToken": False}, False),
        ({"automountServiceAccountToken": True}, {"automountServiceAccountToken": False}, True),
        ({"automountServiceAccountToken": False}, {"automountServiceAccountToken": True}, False),
    ],
)
def test_the_pod_then_the_account_decides(
    pod: dict[str, Any], account: dict[str, Any], want: bool
) -> None:
    assert sa.should_automount(account, pod) is want


@pytest.mark.parametrize(
    ("spec", "want"),
    [
        # A token volume the pod has already is used; only containers without a mount get one.
        (
            {
                "containers": [{"name": "a"}, {"name": "b", "volumeMounts": [MOUNT]}],
                "volumes": [sa.token_volume("kube-api-access-abcde")],
            },
            {
                "containers": [
                    {"name": "a", "volumeMounts": [MOUNT]},
                    {"name": "b", "volumeMounts": [MOUNT]},
                ],
                "volumes": [sa.token_volume("kube-api-access-abcde")],
            },
        ),
        # Every container mounts something there already: no volume is added.
        (
            {
                "containers": [
                    {"name": "a", "volumeMounts": [{"name": "x", "mountPath": sa.MOUNT_PATH}]}
                ]
            },
            {
                "containers": [
                    {"name": "a", "volumeMounts": [{"name": "x", "mountPath": sa.MOUNT_PATH}]}
                ]
            },
        ),
        ({}, {}),
    ],
)
def test_mounts(spec: dict[str, Any], want: dict[str, Any]) -> None:
    sa.mount_token(spec)
    assert spec == want


def test_a_new_volume_has_a_generated_name_and_shares_no_container() -> None:
    container: dict[str, Any] = {"name": "a"}
    spec: dict[str, Any] = {"initContainers": [{"name": "i"}], "containers": [container]}
    sa.mount_token(spec)
    (volume,) = spec["volumes"]
    assert volume["name"].startswith("kube-api-access-") and len(volume["name"]) == 21
    assert volume == sa.token_volume(volume["name"])
    mount = {"name": volume["name"], "readOnly": True, "mountPath": sa.MOUNT_PATH}
    assert spec["initContainers"][0]["volumeMounts"] == [mount]
    assert spec["containers"][0]["volumeMounts"] == [mount]
    assert container == {"name": "a"}, "the caller's container is left as it was"


SECRET_VOLUME = {"volumes": [{"name": "v", "secret": {"secretName": "x"}}]}
SECRET_ENV = {"name": "E", "valueFrom": {"secretKeyRef": {"name": "x", "key": "k"}}}
ENFORCING = {
    "metadata": {"name": "strict", "annotations": {sa.ENFORCE_MOUNTABLE_SECRETS: "true"}},
    "secrets": [{"name": "allowed"}],
    "imagePullSecrets": [{"name": "pull"}],
}


@pytest.mark.parametrize(
    ("account", "spec", "want"),
    [
        (
            {"metadata": {"name": "lax"}},
            {"volumes": [{"name": "v", "secret": {"secretName": "x"}}]},
            None,
        ),
        (ENFORCING, {"volumes": [{"name": "v", "secret": {"secretName": "allowed"}}]}, None),
        (
            ENFORCING,
            SECRET_VOLUME,
            'volume with secret.secretName="x" is not allowed because service account strict '
            "does not reference that secret",
        ),
        (
            ENFORCING,
            {
                "initContainers": [
                    {
                        "name": "i",
                        "env": [
                            {"name": "E", "valueFrom": {"secretKeyRef": {"name": "x", "key": "k"}}}
                        ],
                    }
                ]
            },
            'init container i with envVar E referencing secret.secretName="x" is not allowed '
            "because service account strict does not reference that secret",
        ),
        (
            ENFORCING,
            {"imagePullSecrets": [{"name": "pull"}, {"name": "other"}]},
            'imagePullSecrets[1].name="other" is not allowed because service account strict '
            "does not reference that imagePullSecret",
        ),
    ],
)
def test_mountable_secrets_are_enforced_when_the_account_says_so(
    account: dict[str, Any], spec: dict[str, Any], want: str | None
) -> None:
    assert sa.secret_reference_error(account, spec) == want
