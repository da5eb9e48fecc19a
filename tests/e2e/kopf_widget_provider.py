"""A kopf operator run on an APIExport's virtual workspace (one consumer) by
test_export_virtual_workspace.py: the provider's widgets get a status."""

from __future__ import annotations

from typing import Any

import kopf


@kopf.on.startup()
def configure(settings: kopf.OperatorSettings, **_: Any) -> None:
    settings.watching.server_timeout = 30
    settings.posting.enabled = False  # events are not the provider's to write in a consumer


@kopf.on.create("example.kcp.io", "v1", "widgets")
def created(spec: kopf.Spec, patch: kopf.Patch, **_: Any) -> None:
    patch.status["phase"] = f"Provisioned-{spec.get('size', 1)}"
