"""OpenAPI as kubectl fetches and caches it, and `kubectl explain` on top of it.

The v3 index lists one document per group/version under a `?hash=` URL; hashed URLs are immutable
(kube-openapi handler3: ETag, `Cache-Control: public, immutable`, Expires, 301 for a stale hash).
kubectl 1.27+ explain from v3; `--output=plaintext-openapiv2` (and kubectl <= 1.26) read
`/openapi/v2` as gnostic protobuf.
"""

from __future__ import annotations

import email.utils
import gzip
import http.client
import json
import time
from typing import Any

import pytest

from tests.e2e.kubectl_output import require_binary
from tests.server_process import ServerProcess

pytestmark = pytest.mark.e2e

V2_PROTOBUF = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
# Upstream descriptions (k8s.io/api core/v1 types.go), as explain prints them once unwrapped.
CONTAINERS_DOC = (
    "List of containers belonging to the pod. Containers cannot currently be added or removed. "
    "There must be at least one container in a Pod. Cannot be updated."
)
IMAGE_DOC = "Container image name. More info: https://kubernetes.io/docs/concepts/containers/images"


def _get(server: ServerProcess, path: str, **headers: str) -> tuple[int, dict[str, str], bytes]:
    return server.request("GET", path, headers={k.replace("_", "-"): v for k, v in headers.items()})


def test_openapi_v3_index_and_hashed_documents(server: ServerProcess, cluster: str) -> None:
    prefix = f"/clusters/{cluster}"
    status, headers, body = _get(server, f"{prefix}/openapi/v3")
    assert status == 200
    assert headers["Cache-Control"] == "no-cache, private"
    index: dict[str, Any] = json.loads(body)["paths"]
    for key in ("api/v1", "apis/apps/v1", "apis/batch/v1", "apis/rbac.authorization.k8s.io/v1"):
        assert index[key]["serverRelativeURL"].startswith(f"{prefix}/openapi/v3/{key}?hash=")
    assert _get(server, f"{prefix}/openapi/v3", If_None_Match=headers["ETag"])[0] == 304

    url = index["apis/apps/v1"]["serverRelativeURL"]
    digest = url.rpartition("hash=")[2]
    status, headers, body = _get(server, url)
    assert status == 200
    assert headers["ETag"] == f'"{digest}"'
    assert headers["Cache-Control"] == "public, immutable"
    expires = email.utils.parsedate_to_datetime(headers["Expires"]).timestamp()
    assert expires > time.time() + 360 * 24 * 3600
    document = json.loads(body)
    deployment = document["components"]["schemas"]["io.k8s.api.apps.v1.Deployment"]
    assert deployment["x-kubernetes-group-version-kind"] == [
        {"group": "apps", "kind": "Deployment", "version": "v1"}
    ]
    assert (
        f"{prefix.removeprefix(prefix)}/apis/apps/v1/namespaces/{{namespace}}/deployments"
        in (document["paths"])
    )

    not_modified = _get(server, url, If_None_Match=f'"other", "{digest}"')
    assert (not_modified[0], not_modified[2]) == (304, b"")
    status, zipped_headers, zipped = _get(server, url, Accept_Encoding="gzip")
    assert (status, zipped_headers["Content-Encoding"]) == (200, "gzip")
    assert gzip.decompress(zipped) == body and len(zipped) < len(body) / 3

    unhashed = _get(server, f"{prefix}/openapi/v3/apis/apps/v1")
    assert unhashed[1]["Cache-Control"] == "no-cache, private" and unhashed[2] == body
    # A stale hash is sent to the current document rather than served as immutable.
    connection = http.client.HTTPSConnection("127.0.0.1", server.port, context=server.ssl_context())
    connection.request("GET", url.replace("hash=", "hash=0"))
    moved = connection.getresponse()
    moved.read()
    connection.close()
    assert (moved.status, moved.headers["Location"]) == (301, url)
    assert moved.headers["Cache-Control"] == "no-cache, private"
    assert _get(server, f"{prefix}/openapi/v3/apis/nope/v1")[0] == 404
    refused = _get(server, url, Accept="application/com.github.proto-openapi.spec.v3.v1.0+protobuf")
    assert refused[0] == 406


def test_openapi_v2_json_and_protobuf(server: ServerProcess, cluster: str) -> None:
    path = f"/clusters/{cluster}/openapi/v2"
    status, headers, body = _get(server, path, Accept="application/json")
    assert (status, headers["Content-Type"]) == (200, "application/json")
    swagger = json.loads(body)
    assert swagger["swagger"] == "2.0"
    pod = swagger["definitions"]["io.k8s.api.core.v1.Pod"]
    assert pod["x-kubernetes-group-version-kind"] == [{"group": "", "kind": "Pod", "version": "v1"}]
    assert "/api/v1/namespaces/{namespace}/pods/{name}" in swagger["paths"]
    assert _get(server, path, Accept="application/json", If_None_Match=headers["ETag"])[0] == 304

    status, headers, proto = _get(server, path, Accept=V2_PROTOBUF)
    assert (status, headers["Content-Type"]) == (200, V2_PROTOBUF)
    assert b"io.k8s.api.core.v1.Pod" in proto and b"x-kubernetes-group-version-kind" in proto
    assert _get(server, path, Accept=V2_PROTOBUF, If_None_Match=headers["ETag"])[0] == 304


@pytest.mark.parametrize("binary", ["kubectl", "kubectl.1.27", "kubectl.1.29", "kubectl.1.33"])
def test_explain(server: ServerProcess, cluster: str, binary: str) -> None:
    kubectl = require_binary(binary)
    out = server.kubectl(
        "explain", "deployment.spec.template.spec.containers", cluster=cluster, binary=kubectl
    ).stdout
    assert out.splitlines()[:3] == ["GROUP:      apps", "KIND:       Deployment", "VERSION:    v1"]
    assert "FIELD: containers <[]Container>" in out
    flat = " ".join(out.split())
    assert CONTAINERS_DOC in flat
    assert "image <string> " + IMAGE_DOC in flat
    assert "name <string> -required- Name of the container specified as a DNS_LABEL." in flat

    tree = server.kubectl("explain", "pods", "--recursive", cluster=cluster, binary=kubectl).stdout
    lines = tree.splitlines()
    assert lines[:2] == ["KIND:       Pod", "VERSION:    v1"]
    # Nested fields, indented two spaces a level, with their types.
    for expected in (
        "  spec\t<PodSpec>",
        "    containers\t<[]Container> -required-",
        "      image\t<string>",
        "      ports\t<[]ContainerPort>",
        "        containerPort\t<integer> -required-",
    ):
        assert expected in lines, expected


def test_explain_caches_hashed_documents(server: ServerProcess, cluster: str) -> None:
    """kubectl's HTTP disk cache serves a hashed document again without asking for it anew."""
    server.kubectl("explain", "jobs.spec", cluster=cluster)
    again = server.kubectl("explain", "jobs.spec.backoffLimit", "-v=8", cluster=cluster)
    assert "Specifies the number of retries before marking this job failed." in " ".join(
        again.stdout.split()
    )
    # The log of the hashed document's request, up to the next request.
    exchange = again.stderr.split("/openapi/v3/apis/batch/v1?hash=", 1)[1].split(" GET ", 1)[0]
    assert "X-From-Cache: 1" in exchange


@pytest.mark.parametrize("binary", ["kubectl.1.27", "kubectl.1.33"])
def test_explain_from_openapi_v2(server: ServerProcess, cluster: str, binary: str) -> None:
    kubectl = require_binary(binary)
    out = server.kubectl(
        "explain",
        "deployment.spec.template.spec.containers",
        "--output=plaintext-openapiv2",
        "-v=6",
        cluster=cluster,
        binary=kubectl,
    )
    assert "/openapi/v2" in out.stderr and "/openapi/v3/apis" not in out.stderr
    lines = out.stdout.splitlines()
    assert lines[:2] == ["KIND:     Deployment", "VERSION:  apps/v1"]
    assert "RESOURCE: containers <[]Object>" in lines
    assert CONTAINERS_DOC in " ".join(out.stdout.split())
    recursive = server.kubectl(
        "explain",
        "pods",
        "--recursive",
        "--output=plaintext-openapiv2",
        cluster=cluster,
        binary=kubectl,
    ).stdout.splitlines()
    assert "      containers\t<[]Object>" in recursive
    assert "         image\t<string>" in recursive
