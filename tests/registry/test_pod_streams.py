"""The checks kube-apiserver makes before it streams a pod's log or opens an exec: options and
container, as tables."""

from __future__ import annotations

from typing import Any

import pytest

from minikcp.machinery import errors
from minikcp.registry import pod_streams


def _pod(*containers: str, init: tuple[str, ...] = ()) -> dict[str, Any]:
    return {
        "metadata": {"name": "web-1"},
        "spec": {
            "initContainers": [{"name": n} for n in init],
            "containers": [{"name": n} for n in containers],
        },
    }


@pytest.mark.parametrize(
    ("pod", "asked", "chosen"),
    [
        (_pod("app"), "", "app"),
        (_pod("app", "side"), "side", "side"),
        (_pod("app", init=("setup",)), "setup", "setup"),
        (_pod("app", init=("setup",)), "", "app"),
    ],
)
def test_container_chosen(pod: dict[str, Any], asked: str, chosen: str) -> None:
    assert pod_streams.validate_container(asked, pod) == chosen


@pytest.mark.parametrize(
    ("pod", "asked", "message"),
    [
        (
            _pod("a", "b", init=("setup",)),
            "",
            "a container name must be specified for pod web-1, choose one of: [setup a b]",
        ),
        (_pod(), "", "a container name must be specified for pod web-1"),
        (_pod("app"), "nope", "container nope is not valid for pod web-1"),
    ],
)
def test_container_refused(pod: dict[str, Any], asked: str, message: str) -> None:
    with pytest.raises(errors.StatusError) as refused:
        pod_streams.validate_container(asked, pod)
    assert (refused.value.code, refused.value.message) == (400, message)


@pytest.mark.parametrize(
    ("query", "options"),
    [
        ({}, pod_streams.LogOptions()),
        (
            {"container": "c", "follow": "true", "tailLines": "0", "limitBytes": "5"},
            pod_streams.LogOptions(container="c", follow=True, tail_lines=0, limit_bytes=5),
        ),
        (
            {"timestamps": "1", "previous": "false", "sinceSeconds": "10"},
            pod_streams.LogOptions(timestamps=True, since_seconds=10),
        ),
    ],
)
def test_log_options(query: dict[str, str], options: pod_streams.LogOptions) -> None:
    assert pod_streams.parse_log_options(query, "web-1") == options


@pytest.mark.parametrize(
    ("query", "code", "message"),
    [
        (
            {"tailLines": "-1"},
            422,
            'PodLogOptions "web-1" is invalid: tailLines: Invalid value: -1: must be greater '
            "than or equal to 0",
        ),
        (
            {"limitBytes": "0"},
            422,
            'PodLogOptions "web-1" is invalid: limitBytes: Invalid value: 0: must be greater '
            "than 0",
        ),
        (
            {"sinceSeconds": "5", "sinceTime": "2026-01-01T00:00:00Z"},
            422,
            'PodLogOptions "web-1" is invalid: Forbidden: at most one of `sinceTime` or '
            "`sinceSeconds` may be specified",
        ),
        ({"tailLines": "x"}, 400, 'strconv.ParseInt: parsing "x": invalid syntax'),
        ({"follow": "yes"}, 400, 'strconv.ParseBool: parsing "yes": invalid syntax'),
    ],
)
def test_log_options_refused(query: dict[str, str], code: int, message: str) -> None:
    with pytest.raises(errors.StatusError) as refused:
        pod_streams.parse_log_options(query, "web-1")
    assert (refused.value.code, refused.value.message) == (code, message)
