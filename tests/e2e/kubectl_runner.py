"""A kubectl bound to one logical cluster and one kubectl binary, for the scenario suites."""

from __future__ import annotations

import json
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.server_process import ServerProcess

# The default `kubectl` is a dispatcher that runs kubectl 1.32 (the server reports minor 32).
DEFAULT = "kubectl"
# The other minors the key scenarios also run with.
OTHER_MINORS = ("1.29", "1.33")


def versioned_binary(minor: str) -> str | None:
    """kubectl.<minor>, on PATH or beside the real file of the `kubectl` dispatcher."""
    found = shutil.which(f"kubectl.{minor}")
    if found:
        return found
    dispatcher = shutil.which(DEFAULT)
    if dispatcher:
        candidate = Path(dispatcher).resolve().parent / f"kubectl.{minor}"
        if candidate.exists():
            return str(candidate)
    return None


@dataclass
class Kubectl:
    server: ServerProcess
    cluster: str
    binary: str = DEFAULT
    namespace: str = "default"

    def __call__(
        self,
        *args: str,
        input: str | None = None,
        check: bool = True,
        env: dict[str, str] | None = None,
    ) -> subprocess.CompletedProcess[str]:
        return self.server.kubectl(
            *args, cluster=self.cluster, binary=self.binary, input=input, check=check, env=env
        )

    def fails(self, *args: str, input: str | None = None) -> subprocess.CompletedProcess[str]:
        """Runs a command that must fail; returns it for assertions on stderr."""
        result = self(*args, input=input, check=False)
        assert result.returncode != 0, f"kubectl {' '.join(args)} succeeded:\n{result.stdout}"
        return result

    def get(self, resource: str, name: str, *, managed_fields: bool = False) -> dict[str, Any]:
        """The stored object as kubectl shows it with `-o json`."""
        args = ["get", resource, name, "-o", "json"]
        if managed_fields:
            args.append("--show-managed-fields")
        value = json.loads(self(*args).stdout)
        assert isinstance(value, dict)
        return value

    def path(self, group_version: str, resource: str, name: str = "") -> str:
        """The URL path of a namespaced resource (or one object) in this logical cluster."""
        root = "api/v1" if group_version == "v1" else f"apis/{group_version}"
        base = f"/clusters/{self.cluster}/{root}/namespaces/{self.namespace}/{resource}"
        return f"{base}/{name}" if name else base

    def resource_version(self, resource: str, name: str) -> str:
        return str(self.get(resource, name)["metadata"]["resourceVersion"])


def container(obj: dict[str, Any], name: str) -> dict[str, Any]:
    """The pod-template container called `name` of a Deployment."""
    for item in obj["spec"]["template"]["spec"]["containers"]:
        if item["name"] == name:
            return item  # type: ignore[no-any-return]
    raise AssertionError(f"no container {name!r} in {obj['metadata']['name']}")


def container_names(obj: dict[str, Any]) -> list[str]:
    return [c["name"] for c in obj["spec"]["template"]["spec"]["containers"]]


def env_of(obj: dict[str, Any], name: str) -> list[tuple[str, str]]:
    return [(e["name"], e.get("value", "")) for e in container(obj, name).get("env", [])]


def managers(obj: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    """managedFields as {(manager, operation): fieldsV1}."""
    return {
        (m.get("manager", ""), m["operation"]): m["fieldsV1"]
        for m in obj["metadata"].get("managedFields", [])
    }
