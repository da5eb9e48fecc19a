"""LimitRanger: container defaults and the min/max/ratio messages (limitranger admission_test)."""

from __future__ import annotations

from typing import Any

import pytest

from minikcp.machinery import limit_ranges


def _range(*items: dict[str, Any]) -> dict[str, Any]:
    return {"spec": {"limits": list(items)}}


def _pod(*containers: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"name": "p"}, "spec": {"containers": list(containers)}}


def _c(name: str = "c", **resources: dict[str, str]) -> dict[str, Any]:
    return {"name": name, "resources": resources}


CONTAINER_DEFAULTS = _range(
    {
        "type": "Container",
        "default": {"cpu": "1", "memory": "1Gi"},
        "defaultRequest": {"cpu": "500m"},
    }
)


def test_defaults_fill_only_what_is_missing() -> None:
    pod = _pod(_c("a"), _c("b", limits={"cpu": "2"}, requests={"cpu": "2"}))
    pod["spec"]["initContainers"] = [{"name": "i"}]
    limit_ranges.apply_defaults(pod, CONTAINER_DEFAULTS)
    a, b = pod["spec"]["containers"]
    assert a["resources"] == {"requests": {"cpu": "500m"}, "limits": {"cpu": "1", "memory": "1Gi"}}
    assert b["resources"] == {"requests": {"cpu": "2"}, "limits": {"cpu": "2", "memory": "1Gi"}}
    assert pod["spec"]["initContainers"][0]["resources"] == a["resources"]
    assert pod["metadata"]["annotations"][limit_ranges.ANNOTATION] == (
        "LimitRanger plugin set: cpu request for container a; cpu, memory limit for container a; "
        "memory limit for container b; cpu request for init container i; cpu, memory limit for "
        "init container i"
    )


def test_no_defaults_no_annotation() -> None:
    pod = _pod(_c("a"))
    limit_ranges.apply_defaults(pod, _range({"type": "Container", "max": {"cpu": "1"}}))
    assert pod == _pod(_c("a"))


@pytest.mark.parametrize(
    ("item", "container", "messages"),
    [
        (
            {"min": {"cpu": "100m"}},
            _c(requests={"cpu": "50m"}),
            ["minimum cpu usage per Container is 100m, but request is 50m"],
        ),
        (
            {"min": {"cpu": "100m"}},
            _c(),
            ["minimum cpu usage per Container is 100m.  No request is specified"],
        ),
        (
            {"min": {"memory": "1Gi"}},
            _c(requests={"memory": "2Gi"}, limits={"memory": "512Mi"}),
            ["minimum memory usage per Container is 1Gi, but limit is 512Mi"],
        ),
        (
            {"max": {"cpu": "1"}},
            _c(requests={"cpu": "500m"}),
            ["maximum cpu usage per Container is 1.  No limit is specified"],
        ),
        (
            {"max": {"cpu": "1"}},
            _c(requests={"cpu": "2"}, limits={"cpu": "1"}),
            ["maximum cpu usage per Container is 1, but request is 2"],
        ),
        (
            {"maxLimitRequestRatio": {"cpu": "2"}},
            _c(requests={"cpu": "100m"}, limits={"cpu": "250m"}),
            ["cpu max limit to request ratio per Container is 2, but provided ratio is 2.500000"],
        ),
        (
            {"maxLimitRequestRatio": {"cpu": "2"}},
            _c(limits={"cpu": "250m"}),
            [
                "cpu max limit to request ratio per Container is 2, but no request is specified "
                "or request is 0"
            ],
        ),
        (
            {"min": {"cpu": "100m"}, "max": {"cpu": "1"}, "maxLimitRequestRatio": {"cpu": "4"}},
            _c(requests={"cpu": "200m"}, limits={"cpu": "800m"}),
            [],
        ),
    ],
)
def test_container_limits(
    item: dict[str, Any], container: dict[str, Any], messages: list[str]
) -> None:
    found = limit_ranges.pod_violations(_pod(container), _range({"type": "Container", **item}))
    assert found == messages


def test_pod_limits_add_containers() -> None:
    pod = _pod(
        _c("a", requests={"memory": "1Gi"}, limits={"memory": "1Gi"}),
        _c("b", requests={"memory": "1Gi"}, limits={"memory": "1Gi"}),
    )
    found = limit_ranges.pod_violations(pod, _range({"type": "Pod", "max": {"memory": "1536Mi"}}))
    assert found == ["maximum memory usage per Pod is 1536Mi, but limit is 2Gi"]


def test_claim_limits() -> None:
    claim_range = _range(
        {"type": "PersistentVolumeClaim", "min": {"storage": "1Gi"}, "max": {"storage": "2Gi"}}
    )

    def claim(storage: str) -> dict[str, Any]:
        return {"spec": {"resources": {"requests": {"storage": storage}}}}

    assert limit_ranges.claim_violations(claim("1Gi"), claim_range) == []
    assert limit_ranges.claim_violations(claim("3Gi"), claim_range) == [
        "maximum storage usage per PersistentVolumeClaim is 2Gi, but request is 3Gi"
    ]
    assert limit_ranges.claim_violations({"spec": {}}, claim_range) == [
        "minimum storage usage per PersistentVolumeClaim is 1Gi.  No request is specified",
        "maximum storage usage per PersistentVolumeClaim is 2Gi.  No request is specified",
    ]


@pytest.mark.parametrize(
    ("messages", "text"),
    [(["a"], "a"), (["a", "b"], "[a, b]")],
)
def test_aggregate(messages: list[str], text: str) -> None:
    assert limit_ranges.aggregate(messages) == text
