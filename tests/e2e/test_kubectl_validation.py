"""Field validation through kubectl, and bad patch bodies through raw HTTP.

Every refused request leaves the object as it was (same resourceVersion).
"""

from __future__ import annotations

import urllib.request
from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml

from tests.e2e.crd_manifests import crd, widget
from tests.e2e.kubectl_runner import Kubectl

pytestmark = pytest.mark.e2e

SMP = {"Content-Type": "application/strategic-merge-patch+json"}
JSON_PATCH = {"Content-Type": "application/json-patch+json"}
JSON = {"Content-Type": "application/json"}


def deployment(name: str, **spec_extra: Any) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            **spec_extra,
            "replicas": 1,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "main", "image": "nginx:1.27"}]},
            },
        },
    }


def write(workdir: Path, obj: dict[str, Any]) -> str:
    path = workdir / f"{obj['metadata']['name']}.yaml"
    path.write_text(yaml.safe_dump(obj))
    return str(path)


STRICT_ERROR = 'strict decoding error: unknown field "spec.foo"'


@pytest.mark.parametrize("verb", ["apply", "create"])
def test_unknown_field_is_refused(kubectl: Kubectl, workdir: Path, verb: str) -> None:
    path = write(workdir, deployment("bad", foo="bar"))
    refused = kubectl.fails(verb, "-f", path)
    assert f'Error from server (BadRequest): error when creating "{path}": {STRICT_ERROR}' in (
        refused.stderr
    )
    assert "not found" in kubectl.fails("get", "deployment", "bad").stderr


def test_unknown_field_in_apply_to_existing_object(kubectl: Kubectl, workdir: Path) -> None:
    """An apply that patches is refused as upstream refuses a patch: 422 Invalid."""
    kubectl("apply", "-f", write(workdir, deployment("web")))
    before = kubectl.get("deployment", "web")
    refused = kubectl.fails("apply", "-f", write(workdir, deployment("web", foo="bar")))
    assert "The request is invalid: patch: Invalid value: " in refused.stderr
    assert refused.stderr.rstrip().endswith(STRICT_ERROR)
    assert kubectl.get("deployment", "web") == before


def test_validate_warn_and_ignore(kubectl: Kubectl, workdir: Path) -> None:
    warned = kubectl(
        "create", "-f", write(workdir, deployment("warned", foo="bar")), "--validate=warn"
    )
    assert warned.stdout.strip() == "deployment.apps/warned created"
    assert 'Warning: unknown field "spec.foo"' in warned.stderr
    assert "foo" not in kubectl.get("deployment", "warned")["spec"]

    ignored = kubectl(
        "apply", "-f", write(workdir, deployment("ignored", foo="bar")), "--validate=false"
    )
    assert ignored.stdout.strip() == "deployment.apps/ignored created"
    assert "Warning" not in ignored.stderr
    assert "foo" not in kubectl.get("deployment", "ignored")["spec"]

    # A patch that adds an unknown field: kubectl patch sends no fieldValidation, and the
    # server's default (Warn) drops the field with a warning.
    rv = kubectl.resource_version("deployment", "ignored")
    patched = kubectl("patch", "deployment", "ignored", "-p", '{"spec":{"foo":1}}')
    assert patched.stdout.strip() == "deployment.apps/ignored patched (no change)"
    assert 'Warning: unknown field "spec.foo"' in patched.stderr
    assert kubectl.resource_version("deployment", "ignored") == rv


def test_duplicate_fields(kubectl: Kubectl, workdir: Path) -> None:
    body = (
        b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"dup"},'
        b'"data":{"a":"1","a":"2"},"extra":true}'
    )
    path = kubectl.path("v1", "configmaps")
    code, _, answer = kubectl.server.request(
        "POST", path + "?fieldValidation=Strict", body, headers=JSON
    )
    status = orjson.loads(answer)
    assert (code, status["reason"]) == (400, "BadRequest")
    assert status["message"] == (
        'strict decoding error: duplicate field "data.a", unknown field "extra"'
    )
    request = urllib.request.Request(
        kubectl.server.base_url + path + "?fieldValidation=Warn", body, JSON, method="POST"
    )
    with urllib.request.urlopen(request, context=kubectl.server.ssl_context()) as response:
        assert response.status == 201
        assert response.headers.get_all("Warning") == [
            '299 - "duplicate field \\"data.a\\""',
            '299 - "unknown field \\"extra\\""',
        ]
        assert orjson.loads(response.read())["data"] == {"a": "2"}, "the last duplicate wins"

    # A duplicate in a patch body counts as well; patches are refused with 422.
    code, _, answer = kubectl.server.request(
        "PATCH",
        kubectl.path("v1", "configmaps", "dup") + "?fieldValidation=Strict",
        b'{"data":{"b":"1","b":"2"}}',
        headers=SMP,
    )
    status = orjson.loads(answer)
    assert (code, status["reason"]) == (422, "Invalid")
    assert status["details"]["causes"][0]["field"] == "patch"
    assert status["message"].endswith('strict decoding error: duplicate field "data.b"')

    # kubectl decodes a manifest before sending it, so a duplicate never reaches the server:
    # the last value wins, as it does against kube-apiserver.
    manifest = workdir / "dup.json"
    manifest.write_text(
        '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"dup2"},'
        '"data":{"k":"first","k":"second"}}'
    )
    kubectl("create", "-f", str(manifest))
    assert kubectl.get("configmap", "dup2")["data"] == {"k": "second"}


# -- bad patch bodies over raw HTTP -------------------------------------------------------------


def _patch(k: Kubectl, body: bytes, headers: dict[str, str]) -> tuple[int, dict[str, Any]]:
    code, _, answer = k.server.request(
        "PATCH", k.path("apps/v1", "deployments", "web"), body, headers=headers
    )
    return code, orjson.loads(answer)


def _containers_patch(*items: dict[str, Any]) -> bytes:
    return orjson.dumps({"spec": {"template": {"spec": {"containers": list(items)}}}})


@pytest.mark.parametrize(
    ("body", "headers", "code", "reason", "fragment"),
    [
        pytest.param(b'{"spec":{"replicas":', SMP, 400, "BadRequest", "", id="malformed-smp"),
        pytest.param(
            b'[{"op":"add","path":"/spec/replicas"',
            JSON_PATCH,
            400,
            "BadRequest",
            "",
            id="malformed-json-patch",
        ),
        # kube-apiserver passes strategic merge errors other than its format sentinels through
        # as a 500 (interpretStrategicMergePatchError); bad input is never a server error here,
        # so minikcp answers 400 BadRequest with the same Go message.
        pytest.param(
            _containers_patch({"image": "nginx:1.28"}),
            SMP,
            400,
            "BadRequest",
            "map: map[image:nginx:1.28] does not contain declared merge key: name",
            id="missing-merge-key",
        ),
        pytest.param(
            _containers_patch({"name": "main", "$patch": "bogus"}),
            SMP,
            400,
            "BadRequest",
            "unknown patch type: bogus in map: map[$patch:bogus name:main]",
            id="unknown-patch-directive",
        ),
        pytest.param(
            b'{"spec":{"$setElementOrder":[]}}',
            SMP,
            400,
            "BadRequest",
            "invalid patch format of setElementOrder list",
            id="set-element-order-without-list",
        ),
        pytest.param(
            b'{"spec":{"template":{"spec":{"$retainKeys":"volumes"}}}}',
            SMP,
            400,
            "BadRequest",
            "invalid patch format of retainKeys",
            id="retain-keys-not-a-list",
        ),
        pytest.param(
            orjson.dumps([{"op": "test", "path": "/spec/replicas", "value": 1}] * 10_001),
            JSON_PATCH,
            413,
            "RequestEntityTooLarge",
            "The allowed maximum operations in a JSON patch is 10000, got 10001",
            id="json-patch-too-many-operations",
        ),
        pytest.param(
            b'[{"op":"move","from":"/nope","path":"/spec/x"}]',
            JSON_PATCH,
            422,
            "Invalid",
            "the server rejected our request",
            id="json-patch-missing-path",
        ),
        pytest.param(
            b'{"spec":{"replicas":2}}',
            {"Content-Type": "application/xml"},
            415,
            "UnsupportedMediaType",
            "application/strategic-merge-patch+json",
            id="unknown-patch-type",
        ),
    ],
)
def test_bad_patch_changes_nothing(
    kubectl: Kubectl,
    workdir: Path,
    body: bytes,
    headers: dict[str, str],
    code: int,
    reason: str,
    fragment: str,
) -> None:
    kubectl("apply", "-f", write(workdir, deployment("web")))
    before = kubectl.get("deployment", "web", managed_fields=True)
    got, status = _patch(kubectl, body, headers)
    assert status["kind"] == "Status" and status["status"] == "Failure"
    assert (got, status["code"], status.get("reason", "")) == (code, code, reason)
    assert fragment in status["message"]
    assert kubectl.get("deployment", "web", managed_fields=True) == before


def test_strategic_merge_patch_on_custom_resource_is_unsupported(kubectl: Kubectl) -> None:
    """kubectl patch --type=strategic on a CR: 415 UnsupportedMediaType (kubectl.md section 4)."""
    kubectl("apply", "-f", "-", input=crd())
    kubectl("wait", "--for=condition=Established", "crd/widgets.example.com", "--timeout=10s")
    kubectl("apply", "-f", "-", input=widget("w", {"size": "small"}))
    before = kubectl.get("widget", "w")
    code, _, answer = kubectl.server.request(
        "PATCH",
        kubectl.path("example.com/v1", "widgets", "w"),
        b'{"spec":{"size":"large"}}',
        headers={"Content-Type": "application/strategic-merge-patch+json"},
    )
    assert (code, orjson.loads(answer)["reason"]) == (415, "UnsupportedMediaType")
    refused = kubectl.fails("patch", "widget", "w", "--type=strategic", "-p", '{"spec":{}}')
    assert "application/strategic-merge-patch+json is not supported" in refused.stderr
    assert kubectl.get("widget", "w") == before


def test_bad_delete_dry_run_value(kubectl: Kubectl) -> None:
    kubectl("create", "configmap", "cm", "--from-literal=a=1")
    before = kubectl.get("configmap", "cm")
    code, _, answer = kubectl.server.request(
        "DELETE", kubectl.path("v1", "configmaps", "cm"), b'{"dryRun":["Bogus"]}', headers=JSON
    )
    status = orjson.loads(answer)
    assert (code, status["reason"]) == (422, "Invalid")
    assert status["message"] == (
        'DeleteOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: '
        '[]string{"Bogus"}: supported values: "All"'
    )
    assert kubectl.get("configmap", "cm") == before


def test_invalid_object_meta_is_reported_once(kubectl: Kubectl) -> None:
    """Each ObjectMeta error appears once, worded as kube-apiserver does."""
    refused = kubectl.fails("create", "configmap", "Bad-Name", "--from-literal=a=1")
    assert refused.stderr.strip() == (
        'error: failed to create configmap: ConfigMap "Bad-Name" is invalid: metadata.name: '
        'Invalid value: "Bad-Name": a lowercase RFC 1123 subdomain must consist of lower case '
        "alphanumeric characters, '-' or '.', and must start and end with an alphanumeric "
        "character (e.g. 'example.com', regex used for validation is "
        "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
    )
    for path in (
        kubectl.path("v1", "configmaps"),
        f"/clusters/{kubectl.cluster}/api/v1/namespaces",
    ):
        code, _, answer = kubectl.server.request("POST", path, b'{"metadata":{}}', headers=JSON)
        status = orjson.loads(answer)
        assert (code, status["reason"]) == (422, "Invalid")
        assert status["message"].endswith(
            "is invalid: metadata.name: Required value: name or generateName is required"
        )
        assert len(status["details"]["causes"]) == 1


def test_an_object_nobody_owns_fields_of_has_no_managed_fields(kubectl: Kubectl) -> None:
    """Upstream leaves managedFields out (nil) rather than sending an empty list."""
    path = kubectl.path("v1", "configmaps")
    code, _, answer = kubectl.server.request(
        "POST", path, b'{"metadata":{"name":"bare"}}', headers=JSON
    )
    assert code == 201
    assert "managedFields" not in orjson.loads(answer)["metadata"]
    assert "managedFields" not in kubectl.get("configmap", "bare", managed_fields=True)["metadata"]


def _nested(depth: int) -> bytes:
    return b'{"a":' * depth + b"1" + b"}" * depth


@pytest.mark.parametrize(
    ("method", "suffix", "content_type", "body"),
    [
        ("POST", "", "application/json", b'{"metadata":{"name":"deep"},"x":' + _nested(300) + b"}"),
        ("PUT", "/cm", "application/json", b'{"metadata":{"name":"cm"},"x":' + _nested(300) + b"}"),
        ("PATCH", "/cm", "application/merge-patch+json", b'{"x":' + _nested(600) + b"}"),
        ("PATCH", "/cm", "application/strategic-merge-patch+json", b'{"x":' + _nested(600) + b"}"),
        (
            "PATCH",
            "/cm",
            "application/json-patch+json",
            b'[{"op":"add","path":"/x","value":' + _nested(600) + b"}]",
        ),
        (
            "PATCH",
            "/cm?fieldManager=m",
            "application/apply-patch+yaml",
            b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\ndata:\n"
            + b"".join(b" " * (i + 2) + b"a:\n" for i in range(400)),
        ),
    ],
    ids=["create", "update", "merge", "strategic", "json-patch", "apply-yaml"],
)
def test_a_body_nested_too_deeply_is_a_bad_request(
    kubectl: Kubectl, method: str, suffix: str, content_type: str, body: bytes
) -> None:
    """Never a RecursionError (500): 400, and nothing changes."""
    kubectl("create", "configmap", "cm", "--from-literal=a=1")
    before = kubectl.get("configmap", "cm", managed_fields=True)
    path = kubectl.path("v1", "configmaps") + suffix
    code, _, answer = kubectl.server.request(
        method, path, body, headers={"Content-Type": content_type}
    )
    status = orjson.loads(answer)
    assert (code, status["reason"]) == (400, "BadRequest"), status
    assert "nest" in status["message"]
    assert kubectl.get("configmap", "cm", managed_fields=True) == before
    assert "deep" not in kubectl("get", "configmaps", "-o", "name").stdout
