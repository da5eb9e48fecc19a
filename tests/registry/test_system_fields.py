"""New objects' uids: random version 4 UUIDs, spelled as `str(uuid.uuid4())` spells them."""

from __future__ import annotations

import uuid

from minikcp.registry import system_fields


def test_uids_are_version_4_uuids_in_their_canonical_spelling() -> None:
    for _ in range(1000):  # several blocks of the random pool
        uid = system_fields.new_uid()
        parsed = uuid.UUID(uid)
        assert parsed.version == 4
        assert parsed.variant == uuid.RFC_4122
        assert str(parsed) == uid


def test_uids_do_not_repeat() -> None:
    uids = [system_fields.new_uid() for _ in range(5000)]
    assert len(set(uids)) == len(uids)
