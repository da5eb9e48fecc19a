"""`stored_phase` reads `status.phase` from stored bytes: the status tail when status is the
outermost object's last key, a full decode for every other layout, the same answer either way."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from minikcp.tenancy import phases

_META = {"name": "w", "annotations": {"phase": "Ready"}}


@pytest.mark.parametrize(
    ("obj", "raw", "expected"),
    [
        ({"metadata": _META, "spec": {}, "status": {"phase": "Ready"}}, None, "Ready"),
        (
            {"metadata": _META, "status": {"conditions": [], "phase": "Initializing"}},
            None,
            "Initializing",
        ),
        # No status, or no phase in it: "".
        ({"metadata": _META, "spec": {"type": {"name": "universal"}}}, None, ""),
        ({"metadata": _META, "status": {}}, None, ""),
        ({"metadata": _META, "status": {"phase": 3}}, None, ""),
        ({"metadata": _META, "status": None}, None, ""),
        # Status before spec; spec's last field a nested "status": the top-level one counts.
        (
            {
                "metadata": _META,
                "status": {"phase": "Ready"},
                "spec": {"x": {"status": {"phase": "No"}}},
            },
            None,
            "Ready",
        ),
        ({"status": {"phase": "Ready"}, "metadata": _META}, None, "Ready"),
        # A nested status that ends the document inside spec is not the object's status.
        ({"metadata": _META, "spec": {"a": 1, "status": {"phase": "No"}}}, None, ""),
        # `,"status":` inside a string is escaped, never a key.
        ({"metadata": {"name": "w", "annotations": {"a": ',"status":{"phase":"No"}'}}}, None, ""),
        # Bytes laid out by another encoder (spaces, a trailing newline).
        (None, b'{"metadata": {"name": "w"}, "status": {"phase": "Ready"}}\n', "Ready"),
        (None, b'{"metadata":{"name":"w"},"status":{"phase":"Terminating"} }', "Terminating"),
    ],
)
def test_stored_phase(obj: dict[str, Any] | None, raw: bytes | None, expected: str) -> None:
    value = raw if raw is not None else orjson.dumps(obj)
    assert phases.stored_phase(value) == expected
    decoded = orjson.loads(value).get("status")
    whole = decoded.get("phase") if isinstance(decoded, dict) else None
    assert expected == (whole if isinstance(whole, str) else "")
