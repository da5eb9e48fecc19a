"""Table tests of `kubectl kcp bind apiexport`'s argument parsing, with kcp's messages."""

from __future__ import annotations

import pytest

from minikcp.cli import kcp_plugin, ws


@pytest.mark.parametrize(
    ("reference", "expected"),
    [
        ("root:provider:example.kcp.io", ("root:provider", "example.kcp.io")),
        ("abc123:widgets", ("abc123", "widgets")),
        ("root:a:b:export", ("root:a:b", "export")),
    ],
)
def test_references(reference: str, expected: tuple[str, str]) -> None:
    assert kcp_plugin.split_reference(reference) == expected


@pytest.mark.parametrize(
    ("reference", "message"),
    [
        ("", "`root:ws:apiexport_object` reference to bind is required as an argument"),
        ("example.kcp.io", "fully qualified reference to workspace where APIExport exists"),
        ("Root:Bad:export", "fully qualified reference to workspace where APIExport exists"),
    ],
)
def test_bad_references(reference: str, message: str) -> None:
    with pytest.raises(ws.PluginError, match=message.replace("`", ".")):
        kcp_plugin.split_reference(reference)


@pytest.mark.parametrize(
    ("text", "seconds"), [("30s", 30.0), ("500ms", 0.5), ("2m", 120.0), ("1h", 3600.0)]
)
def test_durations(text: str, seconds: float) -> None:
    assert kcp_plugin.duration_seconds(text) == seconds


def test_bad_duration() -> None:
    with pytest.raises(ws.PluginError, match='invalid argument "soon" for "--timeout" flag'):
        kcp_plugin.duration_seconds("soon")


def test_permission_claims() -> None:
    assert kcp_plugin.permission_claims(["configmaps.core"], ["widgets.example.kcp.io"]) == [
        {"group": "", "resource": "configmaps", "all": True, "state": "Accepted"},
        {"group": "example.kcp.io", "resource": "widgets", "all": True, "state": "Rejected"},
    ]
    with pytest.raises(ws.PluginError, match=r"invalid accepted permission claims: \[invalid"):
        kcp_plugin.permission_claims(["configmaps"], [])
    with pytest.raises(ws.PluginError, match="conflicts with rejected permission claim"):
        kcp_plugin.permission_claims(["secrets.core"], ["secrets.core"])
