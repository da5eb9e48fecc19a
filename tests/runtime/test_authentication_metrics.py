"""The authentication filter's series (k8s.io/apiserver/pkg/endpoints/filters/metrics.go)."""

from __future__ import annotations

import pytest

from minikcp.runtime import metrics


@pytest.mark.parametrize(
    ("username", "label"),
    [
        ("admin", "admin"),
        ("client", "client"),
        ("kube_proxy", "kube_proxy"),
        ("kubelet", "kubelet"),
        ("system:serviceaccount:kube-system:default", "system:serviceaccount:kube-system:default"),
        ("system:serviceaccount:kube-system:other", "other"),
        ("jane@example.com", "email_id"),
        ("system:anonymous", "other"),
        ("kcp-admin", "other"),
        ("", "other"),
    ],
)
def test_user_names_are_compressed_as_upstream(username: str, label: str) -> None:
    assert metrics.compress_username(username) == label


def test_attempts_are_exposed_under_upstream_names() -> None:
    registry = metrics.Metrics()
    stats = registry.authentication
    stats.authenticated("success", "jane@example.com", 0.0005)
    stats.authenticated("success", "kubelet", 0.003)
    stats.authenticated("error", None, 0.001)
    text = registry.exposition().decode()
    assert (
        "# HELP authentication_attempts Counter of authenticated attempts.\n"
        "# TYPE authentication_attempts counter\n"
        'authentication_attempts{result="error"} 1\n'
        'authentication_attempts{result="success"} 2\n'
    ) in text
    assert 'authenticated_user_requests{username="email_id"} 1\n' in text
    assert 'authenticated_user_requests{username="kubelet"} 1\n' in text
    # ExponentialBuckets(0.001, 2, 15); a duration on a bound is in that bucket (le).
    assert 'authentication_duration_seconds_bucket{le="0.001",result="error"} 1.0\n' in text
    assert 'authentication_duration_seconds_bucket{le="0.002",result="success"} 1.0\n' in text
    assert 'authentication_duration_seconds_bucket{le="16.384",result="success"} 2.0\n' in text
    assert "authentication_attempts_total" not in text


def test_authorization_attempts_are_exposed_under_upstream_names() -> None:
    registry = metrics.Metrics()
    registry.authorization.observe("allowed", 0.0001)
    registry.authorization.observe("allowed", 0.0004)
    registry.authorization.observe("no-opinion", 0.002)
    text = registry.exposition().decode()
    assert (
        "# HELP authorization_attempts_total Counter of authorization attempts broken down by "
        "result. It can be either 'allowed', 'denied', 'no-opinion' or 'error'.\n"
        "# TYPE authorization_attempts_total counter\n"
        'authorization_attempts_total{result="allowed"} 2.0\n'
        'authorization_attempts_total{result="no-opinion"} 1.0\n'
    ) in text
    assert 'authorization_duration_seconds_bucket{le="0.001",result="allowed"} 2.0\n' in text
    assert 'authorization_duration_seconds_bucket{le="0.001",result="no-opinion"} 0.0\n' in text
    assert 'authorization_duration_seconds_count{result="no-opinion"} 1.0\n' in text
