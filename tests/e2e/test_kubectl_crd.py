"""CustomResourceDefinitions with real kubectl: each logical cluster has its own APIs."""

from __future__ import annotations

import json
import time

import pytest

from tests.e2e.crd_manifests import crd, widget
from tests.e2e.kubectl_output import parse_table
from tests.e2e.kubectl_runner import Kubectl
from tests.server_process import ServerProcess

pytestmark = pytest.mark.e2e

CRD_NAME = "widgets.example.com"


def _established(kubectl: Kubectl, manifest: str | None = None) -> None:
    kubectl("apply", "-f", "-", input=manifest or crd())
    kubectl("wait", "--for=condition=Established", f"crd/{CRD_NAME}", "--timeout=10s")


def _status(server: ServerProcess, method: str, path: str, body: object = None) -> tuple[int, dict]:
    data = json.dumps(body).encode() if body is not None else None
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    code, _, raw = server.request(method, path, data, headers=headers)
    return code, json.loads(raw) if raw else {}


def test_crd_lifecycle_with_kubectl(server: ServerProcess, kubectl: Kubectl) -> None:
    _established(kubectl)
    kubectl("apply", "-f", "-", input=widget("w1", {"size": "small", "label": "one"}))
    # Defaults applied on create; printer columns (priority 1 only with -o wide).
    assert kubectl.get("widgets", "w1")["spec"]["replicas"] == 1
    table = parse_table(kubectl("get", "wd").stdout)
    assert table.header == ["NAME", "SIZE", "REPLICAS"]
    assert table.row("NAME", "w1") == {"NAME": "w1", "SIZE": "small", "REPLICAS": "1"}
    assert "PHASE" in parse_table(kubectl("get", "widgets", "-o", "wide").stdout).header
    # The category `all` lists widgets beside the built-ins.
    assert "widget.example.com/w1" in kubectl("get", "all").stdout
    explained = kubectl("explain", "widgets.spec.size").stdout
    assert "How big the widget is." in explained
    assert "A Widget is a thing the tests make." in kubectl("explain", "widgets").stdout

    kubectl("patch", "widget", "w1", "--type=merge", "-p", '{"spec":{"size":"large"}}')
    kubectl(
        "patch",
        "widget",
        "w1",
        "--type=json",
        "-p",
        '[{"op":"replace","path":"/spec/label","value":"two"}]',
    )
    strategic = kubectl.fails("patch", "widget", "w1", "-p", '{"spec":{"replicas":2}}')
    assert "application/strategic-merge-patch+json is not supported" in strategic.stderr
    kubectl("scale", "widget", "w1", "--replicas=3")
    kubectl(
        "patch",
        "widget",
        "w1",
        "--subresource=status",
        "--type=merge",
        "-p",
        '{"status":{"phase":"Ready","replicas":3,"selector":"app=w"}}',
    )
    obj = kubectl.get("widget", "w1")
    assert obj["spec"] == {"size": "large", "label": "two", "replicas": 3}
    assert obj["status"] == {"phase": "Ready", "replicas": 3, "selector": "app=w"}
    assert obj["metadata"]["generation"] == 4  # three spec changes; status does not count
    code, scale = _status(server, "GET", kubectl.path("example.com/v1", "widgets", "w1") + "/scale")
    assert code == 200
    assert scale["spec"] == {"replicas": 3}
    assert scale["status"] == {"replicas": 3, "selector": "app=w"}
    # A status write through the main resource is ignored, as with a status subresource.
    kubectl("patch", "widget", "w1", "--type=merge", "-p", '{"status":{"phase":"Gone"}}')
    assert kubectl.get("widget", "w1")["status"]["phase"] == "Ready"

    kubectl("delete", "crd", CRD_NAME)
    gone = kubectl.fails("get", "widgets")
    # kubectl's cached discovery may still know the kind; the server does not.
    assert (
        "the server doesn't have a resource type" in gone.stderr
        or "the server could not find the requested resource" in gone.stderr
    )
    # The objects went with their CRD: a new CRD of the same name starts empty.
    _established(kubectl)
    assert "No resources found" in kubectl("get", "widgets").stderr


def test_crd_in_one_logical_cluster_is_invisible_in_another(
    server: ServerProcess, kubectl: Kubectl
) -> None:
    _established(kubectl)
    other = Kubectl(server, kubectl.cluster + "x")
    assert "widgets" in kubectl("api-resources", "--api-group=example.com").stdout
    assert "widgets" not in other("api-resources").stdout
    assert other.fails("get", "widgets").returncode != 0
    code, _ = _status(server, "GET", f"/clusters/{other.cluster}/apis/example.com/v1")
    assert code == 404
    code, _ = _status(server, "GET", f"/clusters/{kubectl.cluster}/apis/example.com/v1")
    assert code == 200
    index = _status(server, "GET", f"/clusters/{other.cluster}/openapi/v3")[1]
    assert "apis/example.com/v1" not in index["paths"]
    index = _status(server, "GET", f"/clusters/{kubectl.cluster}/openapi/v3")[1]
    assert "apis/example.com/v1" in index["paths"]
    code, v2 = _status(server, "GET", f"/clusters/{kubectl.cluster}/openapi/v2")
    assert "com.example.v1.Widget" in v2["definitions"]
    # Clusters without CRDs share the built-in documents: the same ETag.
    etags = [
        server.request("GET", f"/clusters/{name}/openapi/v2")[1]["ETag"]
        for name in (other.cluster, other.cluster + "z", kubectl.cluster)
    ]
    assert etags[0] == etags[1] != etags[2]


def test_same_crd_with_different_schemas_in_two_clusters(
    server: ServerProcess, kubectl: Kubectl
) -> None:
    other = Kubectl(server, kubectl.cluster + "y")
    _established(kubectl)
    numbers = {
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "required": ["size"],
                "properties": {"size": {"type": "integer", "minimum": 1}},
            }
        },
    }
    _established(other, crd(schema=numbers))
    kubectl("apply", "-f", "-", input=widget("w", {"size": "small"}))
    other("apply", "-f", "-", input=widget("w", {"size": 4}))
    refused = kubectl.fails("apply", "-f", "-", input=widget("n", {"size": 4}))
    assert 'spec.size: Invalid value: "integer": spec.size in body must be of type string' in (
        refused.stderr
    )
    refused = other.fails("apply", "-f", "-", input=widget("s", {"size": "small"}))
    assert "spec.size in body must be of type integer" in refused.stderr
    assert kubectl.get("widget", "w")["spec"]["size"] == "small"
    assert other.get("widget", "w")["spec"] == {"size": 4}
    assert "n" not in kubectl("get", "widgets", "-o", "name").stdout


def test_invalid_custom_resources_are_422_with_causes_and_change_nothing(
    server: ServerProcess, kubectl: Kubectl
) -> None:
    _established(kubectl)
    kubectl("apply", "-f", "-", input=widget("w", {"size": "small"}))
    before = kubectl.get("widget", "w")
    bad = {
        "size": "huge",
        "replicas": 11,
        "label": "Bad1",
        "tags": ["a", "a"],
        "ports": [{"name": "x"}, {"name": "x", "number": 2}],
        "template": {"metadata": {"name": "t"}},
    }
    path = kubectl.path("example.com/v1", "widgets", "w")
    code, _, raw = server.request(
        "PATCH",
        path,
        json.dumps({"spec": bad}).encode(),
        headers={"Content-Type": "application/merge-patch+json"},
    )
    status = json.loads(raw)
    assert code == 422
    assert status["reason"] == "Invalid"
    causes = {(c["field"], c["message"]) for c in status["details"]["causes"]}
    assert causes == {
        ("spec.size", 'Unsupported value: "huge": supported values: "small", "large"'),
        (
            "spec.replicas",
            "Invalid value: 11: spec.replicas in body should be less than or equal to 10",
        ),
        ("spec.label", "Invalid value: \"Bad1\": spec.label in body should match '^[a-z]+$'"),
        ("spec.tags[1]", 'Duplicate value: "a"'),
        (
            "spec.ports[1]",
            'Duplicate value: map[string]interface {}{"name":"x", "number":2}',
        ),
        ("spec.template.apiVersion", "Required value: must not be empty"),
        ("spec.template.kind", "Required value: must not be empty"),
    }
    missing = kubectl.fails("apply", "-f", "-", input=widget("m", {"replicas": 2}))
    assert "spec.size: Required value" in missing.stderr
    assert kubectl.get("widget", "w") == before
    # int-or-string takes both; unknown fields are pruned when validation is off.
    kubectl(
        "apply",
        "--validate=false",
        "-f",
        "-",
        input=widget("p", {"size": "small", "port": "http", "bogus": 1}),
    )
    kubectl("patch", "widget", "p", "--type=merge", "-p", '{"spec":{"port":8080}}')
    assert kubectl.get("widget", "p")["spec"] == {"size": "small", "port": 8080, "replicas": 1}


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda c: c["spec"].update(group="example"), "should be a domain with at least one dot"),
        (
            lambda c: c["metadata"].update(name="other.example.com"),
            'must be spec.names.plural+"."+spec.group',
        ),
        (
            lambda c: c["spec"]["versions"][0].update(served=False),
            "spec.versions[0].served: Invalid value: false: the storage version must be served",
        ),
        (
            lambda c: c["spec"]["versions"][0].pop("schema"),
            "spec.versions[0].schema.openAPIV3Schema: Required value: schemas are required",
        ),
        (
            lambda c: c["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"][
                "spec"
            ].pop("type"),
            "spec.versions[0].schema.openAPIV3Schema.properties[spec].type: Required value: "
            "must not be empty for specified object fields",
        ),
        (
            lambda c: c["spec"]["names"].update(plural="Widgets"),
            'spec.names.plural: Invalid value: "Widgets"',
        ),
        (
            lambda c: c["spec"]["versions"].append(dict(c["spec"]["versions"][0], name="v2")),
            "must have exactly one version marked as storage version",
        ),
    ],
)
def test_invalid_crds_are_422_and_not_created(
    server: ServerProcess, kubectl: Kubectl, change: object, message: str
) -> None:
    body = json.loads(crd())
    change(body)  # type: ignore[operator]
    refused = kubectl.fails("apply", "-f", "-", input=json.dumps(body))
    assert "is invalid" in refused.stderr
    assert message in refused.stderr
    assert "No resources found" in kubectl("get", "crds").stderr


def test_conflicting_names_are_refused_with_a_condition(
    server: ServerProcess, kubectl: Kubectl
) -> None:
    _established(kubectl)
    # Another plural of the same kind in the same group: NamesAccepted=False, never served.
    kubectl("apply", "-f", "-", input=crd(plural="gadgets", singular="gadget", short_names=("gd",)))
    deadline = time.monotonic() + 10
    conditions: dict[str, dict] = {}
    while time.monotonic() < deadline:
        got = kubectl.get("crd", "gadgets.example.com").get("status", {}).get("conditions", [])
        conditions = {c["type"]: c for c in got}
        if "NamesAccepted" in conditions:
            break
        time.sleep(0.05)
    assert conditions["NamesAccepted"]["status"] == "False"
    assert conditions["NamesAccepted"]["reason"] == "KindConflict"
    assert conditions["NamesAccepted"]["message"] == '"Widget" is already in use'
    assert conditions["Established"]["status"] == "False"
    assert "gadgets" not in kubectl("api-resources", "--api-group=example.com").stdout
    # Once the holder is gone, the other CRD gets its names and is served.
    kubectl("delete", "crd", CRD_NAME)
    kubectl("wait", "--for=condition=Established", "crd/gadgets.example.com", "--timeout=10s")
    assert "gadgets" in kubectl("api-resources", "--api-group=example.com").stdout


def test_discovery_shows_a_crd_within_a_second_of_established(
    server: ServerProcess, kubectl: Kubectl
) -> None:
    started = time.monotonic()
    code, _ = _status(
        server,
        "POST",
        f"/clusters/{kubectl.cluster}/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        json.loads(crd()),
    )
    assert code == 201
    while time.monotonic() - started < 1.0:
        code, doc = _status(server, "GET", f"/clusters/{kubectl.cluster}/apis/example.com/v1")
        if code == 200:
            break
        time.sleep(0.01)
    assert code == 200, "not served within a second"
    assert [r["name"] for r in doc["resources"]] == ["widgets", "widgets/scale", "widgets/status"]
    kubectl("wait", "--for=condition=Established", f"crd/{CRD_NAME}", "--timeout=1s")


def test_custom_resources_behave_like_built_ins(server: ServerProcess, kubectl: Kubectl) -> None:
    _established(kubectl)
    manifest = json.loads(widget("f", {"size": "small"}))
    manifest["metadata"].update(labels={"tier": "a"}, finalizers=["example.com/hold"])
    kubectl("apply", "--server-side", "-f", "-", input=json.dumps(manifest))
    kubectl("apply", "-f", "-", input=widget("g", {"size": "large"}))
    assert kubectl("get", "widgets", "-l", "tier=a", "-o", "name").stdout.split() == [
        "widget.example.com/f"
    ]
    names = kubectl("get", "widgets", "--field-selector=metadata.name=g", "-o", "name").stdout
    assert names.split() == ["widget.example.com/g"]
    managers = [
        m["manager"]
        for m in kubectl.get("widget", "f", managed_fields=True)["metadata"]["managedFields"]
    ]
    assert managers == ["kubectl"]
    # A finalizer holds the deletion until it is removed.
    kubectl("delete", "widget", "f", "--wait=false")
    assert kubectl.get("widget", "f")["metadata"]["deletionTimestamp"]
    kubectl(
        "patch",
        "widget",
        "f",
        "--type=json",
        "-p",
        '[{"op":"remove","path":"/metadata/finalizers"}]',
    )
    assert kubectl.fails("get", "widget", "f").returncode != 0
    # Watch sees changes; a wildcard list sees this cluster's widgets with their cluster.
    code, _, raw = server.request(
        "GET",
        kubectl.path("example.com/v1", "widgets") + "?watch=true&timeoutSeconds=1",
    )
    events = [json.loads(line) for line in raw.splitlines() if line.strip()]
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [("ADDED", "g")]
    code, listing = _status(server, "GET", "/clusters/*/apis/example.com/v1/widgets")
    assert code == 200
    mine = [
        i["metadata"]["name"]
        for i in listing["items"]
        if i["metadata"]["annotations"]["kcp.io/cluster"] == kubectl.cluster
    ]
    assert mine == ["g"]


def test_versions_share_objects_and_defaults_apply_on_read(
    server: ServerProcess, kubectl: Kubectl
) -> None:
    body = json.loads(crd())
    v1 = body["spec"]["versions"][0]
    v2 = json.loads(json.dumps(v1))
    v2.update(name="v2", storage=False)
    v2["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"].pop("replicas")
    v3 = dict(v2, name="v3", served=False)
    body["spec"]["versions"] = [v1, v2, v3]
    _established(kubectl, json.dumps(body))
    resources = kubectl("api-resources", "--api-group=example.com", "-o", "name").stdout
    assert resources.split() == ["widgets.example.com"]
    code, _ = _status(server, "GET", f"/clusters/{kubectl.cluster}/apis/example.com/v3")
    assert code == 404
    kubectl("apply", "-f", "-", input=widget("w", {"size": "small"}, api_version="example.com/v2"))
    as_v1 = kubectl.get("widgets.v1.example.com", "w")
    as_v2 = kubectl.get("widgets.v2.example.com", "w")
    assert (as_v1["apiVersion"], as_v2["apiVersion"]) == ("example.com/v1", "example.com/v2")
    # v2 has no default for replicas; v1 adds it when reading what v2 wrote.
    assert "replicas" not in as_v2["spec"]
    assert as_v1["spec"]["replicas"] == 1
    assert as_v1["metadata"]["uid"] == as_v2["metadata"]["uid"]


def test_wildcard_watch_follows_custom_resources_of_every_cluster(
    server: ServerProcess, kubectl: Kubectl
) -> None:
    other = Kubectl(server, kubectl.cluster + "w")
    _established(kubectl)
    _established(other)
    code, listing = _status(server, "GET", "/clusters/*/apis/example.com/v1/widgets")
    assert code == 200
    rv = listing["metadata"]["resourceVersion"]
    kubectl("apply", "-f", "-", input=widget("a", {"size": "small"}))
    other("apply", "-f", "-", input=widget("b", {"size": "large"}))
    code, _, raw = server.request(
        "GET",
        f"/clusters/*/apis/example.com/v1/widgets?watch=true&resourceVersion={rv}&timeoutSeconds=1",
    )
    assert code == 200
    seen = {
        (e["object"]["metadata"]["annotations"]["kcp.io/cluster"], e["object"]["metadata"]["name"])
        for e in (json.loads(line) for line in raw.splitlines() if line.strip())
        if e["type"] == "ADDED"
    }
    assert {(kubectl.cluster, "a"), (other.cluster, "b")} <= seen
    # Writes through the wildcard are refused: it is for lists and watches.
    code, _ = _status(
        server,
        "POST",
        "/clusters/*/apis/example.com/v1/namespaces/default/widgets",
        json.loads(widget("c", {"size": "small"})),
    )
    assert code == 405


def test_server_side_apply_merges_list_map_entries_of_two_managers(
    server: ServerProcess, kubectl: Kubectl
) -> None:
    _established(kubectl)
    first = widget("s", {"size": "small", "ports": [{"name": "http", "number": 80}]})
    second = widget("s", {"size": "small", "ports": [{"name": "metrics", "number": 9090}]})
    kubectl("apply", "--server-side", "--field-manager=one", "-f", "-", input=first)
    kubectl("apply", "--server-side", "--field-manager=two", "-f", "-", input=second)
    ports = kubectl.get("widget", "s")["spec"]["ports"]
    assert ports == [{"name": "http", "number": 80}, {"name": "metrics", "number": 9090}]
    changed = widget("s", {"size": "large", "ports": [{"name": "metrics", "number": 9091}]})
    conflict = kubectl.fails(
        "apply", "--server-side", "--field-manager=two", "-f", "-", input=changed
    )
    assert "conflict" in conflict.stderr.lower() and ".spec.size" in conflict.stderr


def test_stored_versions_grow_with_the_storage_version_and_stay_served(
    server: ServerProcess, kubectl: Kubectl
) -> None:
    _established(kubectl)
    body = json.loads(crd())
    v1 = body["spec"]["versions"][0]
    v2 = dict(json.loads(json.dumps(v1)), name="v2")
    v1["storage"] = False
    body["spec"]["versions"] = [v1, v2]
    kubectl("apply", "-f", "-", input=json.dumps(body))
    assert kubectl.get("crd", CRD_NAME)["status"]["storedVersions"] == ["v1", "v2"]
    body["spec"]["versions"] = [v2]
    refused = kubectl.fails("apply", "-f", "-", input=json.dumps(body))
    assert 'status.storedVersions[0]: Invalid value: "v1": must appear in spec.versions' in (
        refused.stderr
    )
    assert [v["name"] for v in kubectl.get("crd", CRD_NAME)["spec"]["versions"]] == ["v1", "v2"]
