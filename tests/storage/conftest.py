"""The `store` fixture: every conformance test runs once per backend listed in BACKENDS."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest

from storage import interface, sqlite


async def _open_sqlite(directory: Path) -> interface.Storage:
    return await sqlite.SqliteStorage.open(directory / "store.db")


# A backend is a name and an opener; add etcd here when its backend lands.
OPENERS: dict[str, Callable[[Path], Awaitable[interface.Storage]]] = {"sqlite": _open_sqlite}
BACKENDS = ["sqlite"]


@pytest.fixture(params=BACKENDS)
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[interface.Storage]:
    opened = await OPENERS[request.param](tmp_path)
    try:
        yield opened
    finally:
        await opened.close()
