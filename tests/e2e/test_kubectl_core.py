"""The everyday kubectl workflow against a real minikcp server."""

from __future__ import annotations

import json
import os
import subprocess
import time

import pytest

from tests.server_process import ServerProcess, load_yaml

pytestmark = pytest.mark.e2e

CONFIGMAP = """
apiVersion: v1
kind: ConfigMap
metadata:
  name: cfg
  namespace: {ns}
  labels:
    tier: backend
data:
  a: "1"
"""

DEPLOYMENT = """
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: {ns}
  labels: {{app: web}}
spec:
  replicas: 2
  selector:
    matchLabels: {{app: web}}
  template:
    metadata:
      labels: {{app: web}}
    spec:
      containers:
      - name: nginx
        image: nginx:1.27
        ports:
        - containerPort: 80
"""


def test_namespace_lifecycle(server: ServerProcess, cluster: str) -> None:
    server.kubectl(
        "create",
        "-f",
        "-",
        cluster=cluster,
        input="apiVersion: v1\nkind: Namespace\nmetadata:\n  name: demo\n",
    )
    out = server.kubectl("get", "namespaces", "-o", "name", cluster=cluster).stdout.split()
    assert "namespace/demo" in out
    assert "namespace/default" in out
    assert "namespace/kube-system" in out
    ns = json.loads(
        server.kubectl("get", "namespace", "demo", "-o", "json", cluster=cluster).stdout
    )
    assert ns["status"]["phase"] == "Active"
    assert ns["metadata"]["annotations"]["kcp.io/cluster"] == cluster
    assert ns["metadata"]["labels"]["kubernetes.io/metadata.name"] == "demo"
    table = server.kubectl("get", "namespace", "demo", cluster=cluster).stdout
    assert table.split("\n")[0].split() == ["NAME", "STATUS", "AGE"]
    assert "Active" in table

    server.kubectl(
        "create", "configmap", "inside", "-n", "demo", "--from-literal=k=v", cluster=cluster
    )
    server.kubectl("delete", "namespace", "demo", "--timeout=30s", cluster=cluster)
    gone = server.kubectl("get", "namespace", "demo", cluster=cluster, check=False)
    assert gone.returncode != 0
    assert 'namespaces "demo" not found' in gone.stderr
    refused = server.kubectl(
        "create",
        "configmap",
        "late",
        "-n",
        "demo",
        "--from-literal=k=v",
        cluster=cluster,
        check=False,
    )
    assert refused.returncode != 0
    assert 'namespaces "demo" not found' in refused.stderr
    forbidden = server.kubectl("delete", "namespace", "default", cluster=cluster, check=False)
    assert forbidden.returncode != 0
    assert "this namespace may not be deleted" in forbidden.stderr


def test_configmap_crud_and_output_formats(server: ServerProcess, cluster: str) -> None:
    server.kubectl("apply", "-f", "-", cluster=cluster, input=CONFIGMAP.format(ns="default"))
    as_yaml = load_yaml(
        server.kubectl("get", "configmap", "cfg", "-o", "yaml", cluster=cluster).stdout
    )
    assert isinstance(as_yaml, dict)
    assert as_yaml["data"] == {"a": "1"}
    assert as_yaml["metadata"]["uid"]
    assert int(as_yaml["metadata"]["resourceVersion"]) > 0
    assert as_yaml["metadata"]["creationTimestamp"].endswith("Z")
    assert server.kubectl("get", "cm", "cfg", "-o", "name", cluster=cluster).stdout.strip() == (
        "configmap/cfg"
    )
    value = server.kubectl("get", "cm", "cfg", "-o", "jsonpath={.data.a}", cluster=cluster).stdout
    assert value == "1"
    described = server.kubectl("describe", "configmap", "cfg", cluster=cluster).stdout
    assert "Name:" in described and "cfg" in described and "tier=backend" in described

    dup = server.kubectl(
        "create", "-f", "-", cluster=cluster, input=CONFIGMAP.format(ns="default"), check=False
    )
    assert dup.returncode != 0
    assert "AlreadyExists" in dup.stderr

    server.kubectl("delete", "configmap", "cfg", cluster=cluster)
    missing = server.kubectl("get", "configmap", "cfg", cluster=cluster, check=False)
    assert 'configmaps "cfg" not found' in missing.stderr


def test_selectors(server: ServerProcess, cluster: str) -> None:
    for name, tier in (("a", "web"), ("b", "db"), ("c", "web")):
        server.kubectl("create", "configmap", name, "--from-literal=x=y", cluster=cluster)
        server.kubectl("label", "configmap", name, f"tier={tier}", cluster=cluster)
    by_label = server.kubectl("get", "cm", "-l", "tier=web", "-o", "name", cluster=cluster).stdout
    assert sorted(by_label.split()) == ["configmap/a", "configmap/c"]
    set_based = server.kubectl(
        "get", "cm", "-l", "tier in (db)", "-o", "name", cluster=cluster
    ).stdout
    assert set_based.split() == ["configmap/b"]
    by_field = server.kubectl(
        "get", "cm", "--field-selector", "metadata.name=b", "-o", "name", cluster=cluster
    ).stdout
    assert by_field.split() == ["configmap/b"]
    bad = server.kubectl("get", "cm", "--field-selector", "data.x=y", cluster=cluster, check=False)
    assert bad.returncode != 0
    assert "field label not supported" in bad.stderr


def test_secret(server: ServerProcess, cluster: str) -> None:
    server.kubectl(
        "create", "secret", "generic", "creds", "--from-literal=password=s3cret", cluster=cluster
    )
    secret = json.loads(
        server.kubectl("get", "secret", "creds", "-o", "json", cluster=cluster).stdout
    )
    assert secret["type"] == "Opaque"
    assert secret["data"] == {"password": "czNjcmV0"}
    table = server.kubectl("get", "secrets", cluster=cluster).stdout.splitlines()
    assert table[0].split() == ["NAME", "TYPE", "DATA", "AGE"]
    assert table[1].split()[:3] == ["creds", "Opaque", "1"]


def test_deployment_scale_and_rollout(simulated_server: ServerProcess, cluster: str) -> None:
    # Rollouts need something to run the pods: a server acting as a physical cluster.
    server = simulated_server
    server.kubectl("apply", "-f", "-", cluster=cluster, input=DEPLOYMENT.format(ns="default"))
    deploy = json.loads(
        server.kubectl("get", "deploy", "web", "-o", "json", cluster=cluster).stdout
    )
    assert deploy["metadata"]["generation"] == 1
    assert deploy["spec"]["strategy"]["type"] == "RollingUpdate"
    server.kubectl("rollout", "status", "deployment/web", "--timeout=20s", cluster=cluster)
    server.kubectl("scale", "deployment", "web", "--replicas=4", cluster=cluster)
    scaled = json.loads(
        server.kubectl("get", "deploy", "web", "-o", "json", cluster=cluster).stdout
    )
    assert scaled["spec"]["replicas"] == 4
    assert scaled["metadata"]["generation"] == 2
    server.kubectl("rollout", "status", "deployment/web", "--timeout=20s", cluster=cluster)
    table = server.kubectl("get", "deployments", cluster=cluster).stdout.splitlines()
    assert table[0].split() == ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"]
    assert table[1].split()[:4] == ["web", "4/4", "4", "4"]
    described = server.kubectl("describe", "deployment", "web", cluster=cluster).stdout
    assert "Replicas:" in described and "nginx:1.27" in described
    server.kubectl("delete", "deployment", "web", cluster=cluster)
    assert server.kubectl("get", "deploy", "-o", "name", cluster=cluster).stdout.strip() == ""


def test_get_watch_sees_update(server: ServerProcess, cluster: str) -> None:
    server.kubectl("create", "configmap", "watched", "--from-literal=v=1", cluster=cluster)
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(server.home),
        "KUBECONFIG": str(server.kubeconfig(cluster)),
    }
    with subprocess.Popen(
        [
            "kubectl",
            "get",
            "configmap",
            "watched",
            "-w",
            "-o",
            'jsonpath={.data.v}{"\\n"}',
            "--request-timeout=20s",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    ) as watcher:
        try:
            assert watcher.stdout is not None
            first = watcher.stdout.readline().strip()
            assert first == "1"
            time.sleep(0.2)
            server.kubectl(
                "patch",
                "configmap",
                "watched",
                "--type=merge",
                "-p",
                '{"data":{"v":"2"}}',
                cluster=cluster,
            )
            second = watcher.stdout.readline().strip()
            assert second == "2"
        finally:
            watcher.kill()


def test_delete_waits_for_finalizers(server: ServerProcess, cluster: str) -> None:
    server.kubectl(
        "create",
        "-f",
        "-",
        cluster=cluster,
        input=(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: held\n"
            "  finalizers: [example.com/hold]\n"
        ),
    )
    server.kubectl("delete", "configmap", "held", "--wait=false", cluster=cluster)
    held = json.loads(server.kubectl("get", "cm", "held", "-o", "json", cluster=cluster).stdout)
    assert held["metadata"]["deletionTimestamp"]
    with subprocess.Popen(
        ["kubectl", "delete", "configmap", "held", "--timeout=20s"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={
            "PATH": os.environ["PATH"],
            "HOME": str(server.home),
            "KUBECONFIG": str(server.kubeconfig(cluster)),
        },
    ) as deleter:
        time.sleep(0.5)
        assert deleter.poll() is None, "delete returned while a finalizer still holds the object"
        server.kubectl(
            "patch",
            "configmap",
            "held",
            "--type=json",
            "-p",
            '[{"op":"remove","path":"/metadata/finalizers"}]',
            cluster=cluster,
        )
        assert deleter.wait(timeout=20) == 0
    gone = server.kubectl("get", "cm", "held", cluster=cluster, check=False)
    assert "not found" in gone.stderr


def test_api_resources_and_version(server: ServerProcess, cluster: str) -> None:
    resources = server.kubectl("api-resources", "-o", "wide", cluster=cluster).stdout
    for expected in ("configmaps", "deployments", "namespaces", "leases", "clusterroles"):
        assert expected in resources
    deploy_line = next(line for line in resources.splitlines() if line.startswith("deployments"))
    assert "deploy" in deploy_line.split() and "apps/v1" in deploy_line
    version = json.loads(server.kubectl("version", "-o", "json", cluster=cluster).stdout)
    assert version["serverVersion"]["minor"] == "32"


def test_clusters_are_isolated(server: ServerProcess, cluster: str) -> None:
    other = cluster + "x"
    server.kubectl("create", "configmap", "same", "--from-literal=who=a", cluster=cluster)
    server.kubectl("create", "configmap", "same", "--from-literal=who=b", cluster=other)
    a = server.kubectl("get", "cm", "same", "-o", "jsonpath={.data.who}", cluster=cluster).stdout
    b = server.kubectl("get", "cm", "same", "-o", "jsonpath={.data.who}", cluster=other).stdout
    assert (a, b) == ("a", "b")
    server.kubectl("delete", "cm", "same", cluster=cluster)
    assert (
        server.kubectl("get", "cm", "same", "-o", "jsonpath={.data.who}", cluster=other).stdout
        == "b"
    )
    listed = server.kubectl("get", "cm", "-A", "-o", "name", cluster=cluster).stdout.split()
    assert "configmap/same" not in listed


def test_builtin_namespace_is_stored_when_first_changed(
    server: ServerProcess, cluster: str
) -> None:
    before = json.loads(
        server.kubectl("get", "ns", "default", "-o", "json", cluster=cluster).stdout
    )
    server.kubectl("label", "namespace", "default", "team=a", cluster=cluster)
    after = json.loads(server.kubectl("get", "ns", "default", "-o", "json", cluster=cluster).stdout)
    assert after["metadata"]["labels"]["team"] == "a"
    assert after["metadata"]["uid"] == before["metadata"]["uid"]
    assert int(after["metadata"]["resourceVersion"]) > int(before["metadata"]["resourceVersion"])
    names = server.kubectl("get", "ns", "-o", "name", cluster=cluster).stdout.split()
    assert names.count("namespace/default") == 1
    other = json.loads(
        server.kubectl("get", "ns", "default", "-o", "json", cluster=cluster + "z").stdout
    )
    assert "team" not in other["metadata"]["labels"]
