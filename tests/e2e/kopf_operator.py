"""A small kopf operator run by test_kopf_operator.py: widgets get a status and events."""

from __future__ import annotations

import logging
from typing import Any

import kopf


@kopf.on.startup()
def configure(settings: kopf.OperatorSettings, **_: Any) -> None:
    settings.watching.server_timeout = 30
    settings.posting.level = logging.INFO


@kopf.on.create("example.com", "v1", "widgets")
def created(body: kopf.Body, spec: kopf.Spec, patch: kopf.Patch, **_: Any) -> dict[str, Any]:
    kopf.info(body, reason="Provisioned", message=f"size {spec['size']}")
    patch.status["phase"] = "Created"
    return {"size": spec["size"]}  # kopf stores a handler's result in status.<handler>


@kopf.on.update("example.com", "v1", "widgets", field="spec.size")
def resized(body: kopf.Body, old: Any, new: Any, patch: kopf.Patch, **_: Any) -> None:
    kopf.info(body, reason="Resized", message=f"{old} -> {new}")
    patch.status["phase"] = f"Resized-{new}"


@kopf.on.delete("example.com", "v1", "widgets")
def deleted(body: kopf.Body, **_: Any) -> None:
    kopf.info(body, reason="Deleting", message="cleaned up")
