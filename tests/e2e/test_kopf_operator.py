"""A kopf operator against one logical cluster: it sees its custom resources and acts on them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.crd_manifests import WIDGET_SCHEMA, crd, widget
from tests.e2e.kubectl_runner import Kubectl
from tests.server_process import ServerProcess

pytestmark = pytest.mark.e2e

OPERATOR = Path(__file__).with_name("kopf_operator.py")


def _eventually(check: Callable[[], Any], timeout: float = 20) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        try:
            result = check()
        except AssertionError:
            if time.monotonic() > deadline:
                raise
        else:
            if result:
                return result
            if time.monotonic() > deadline:
                raise AssertionError("condition not met in time")
        time.sleep(0.1)


@pytest.fixture
def operator(server: ServerProcess, kubectl: Kubectl, tmp_path: Path) -> Iterator[Path]:
    schema = json.loads(json.dumps(WIDGET_SCHEMA))
    # kopf keeps its progress and handler results in status.
    schema["properties"]["status"] = {
        "type": "object",
        "x-kubernetes-preserve-unknown-fields": True,
    }
    kubectl("apply", "-f", "-", input=crd(schema=schema))
    kubectl("wait", "--for=condition=Established", "crd/widgets.example.com", "--timeout=10s")
    log = tmp_path / "kopf.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "kopf",
                "run",
                "--standalone",
                "--namespace=default",
                str(OPERATOR),
            ],
            env={**os.environ, "KUBECONFIG": str(server.kubeconfig(kubectl.cluster))},
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        yield log
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    text = log.read_text()
    assert "Traceback" not in text, text


def _reasons(kubectl: Kubectl, name: str) -> list[str]:
    events = json.loads(kubectl("get", "events", "-o", "json").stdout)["items"]
    return sorted(
        e["reason"]
        for e in events
        if e["involvedObject"]["name"] == name and e["involvedObject"]["kind"] == "Widget"
    )


def test_kopf_operator_handles_create_update_delete(kubectl: Kubectl, operator: Path) -> None:
    kubectl("apply", "-f", "-", input=widget("w1", {"size": "small"}))
    obj = _eventually(
        lambda: (o := kubectl.get("widget", "w1")).get("status", {}).get("phase") == "Created" and o
    )
    assert obj["status"]["created"] == {"size": "small"}
    assert "kopf.zalando.org/KopfFinalizerMarker" in obj["metadata"]["finalizers"]
    _eventually(lambda: _reasons(kubectl, "w1") == ["Provisioned"])

    kubectl("patch", "widget", "w1", "--type=merge", "-p", '{"spec":{"size":"large"}}')
    _eventually(lambda: kubectl.get("widget", "w1")["status"]["phase"] == "Resized-large")
    _eventually(lambda: _reasons(kubectl, "w1") == ["Provisioned", "Resized"])

    # The operator's finalizer holds the deletion until its handler has run.
    kubectl("delete", "widget", "w1", "--timeout=20s")
    assert kubectl.fails("get", "widget", "w1").returncode != 0
    _eventually(lambda: _reasons(kubectl, "w1") == ["Deleting", "Provisioned", "Resized"])
    assert "Deletion is processed: 1 succeeded" in operator.read_text()
