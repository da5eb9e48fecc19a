"""The `store` fixture: every conformance test runs once per backend listed in BACKENDS.

The etcd backend runs against a real etcd started once per test session on free ports (skipped
when the `etcd` binary is not installed); each test starts from an empty KEY_ROOT there.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import etcd_server
import pytest

from storage import interface, sqlite
from storage.types import KEY_ROOT

BACKENDS = ["sqlite", "etcd"]


@pytest.fixture(scope="session")
def etcd_address(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    if etcd_server.ETCD is None:
        pytest.skip("the etcd binary is not installed")
    with etcd_server.running_etcd(tmp_path_factory.mktemp("etcd")) as address:
        yield address


async def _open(backend: str, request: pytest.FixtureRequest, directory: Path) -> interface.Storage:
    if backend == "sqlite":
        return await sqlite.SqliteStorage.open(directory / "store.db")
    from storage import etcd

    store = await etcd.EtcdStorage.open(request.getfixturevalue("etcd_address"))
    await store.delete_prefix(KEY_ROOT)
    return store


@pytest.fixture(params=BACKENDS)
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[interface.Storage]:
    opened = await _open(request.param, request, tmp_path)
    try:
        yield opened
    finally:
        await opened.close()
