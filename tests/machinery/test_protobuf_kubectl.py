"""Real-client tests for the protobuf decoder: what kubectl 1.32/1.33 sends must decode to the JSON
kubectl itself prints for the same object.

A tiny aiohttp server answers discovery, serves the few objects some commands read first, and
records each POST/DELETE body. Every kubectl run gets its own URL prefix (/r<N>, which kubectl keeps
on every request) and its own HOME. The expected JSON comes from the same kubectl's
``--dry-run=client -o json`` or, for commands without a dry run (auth can-i/whoami, create token,
drain, debug), from the JSON body kubectl 1.31 sends for the same command (1.31 does not use
protobuf yet). No normalisation is needed: both sides are encoding/json output of the same Go
object, ``"creationTimestamp": null`` included.

Deliberately slower than a unit test: about 130 kubectl runs, ~10 s on two idle cores.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import shlex
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from minikcp.machinery import protobuf

PROTOBUF_VERSIONS = ("1.32", "1.33")
JSON_VERSION = "1.31"

# (groupVersion, resource, kind, namespaced): what the fake server's discovery lists.
RESOURCES = [
    ("v1", "namespaces", "Namespace", False),
    ("v1", "configmaps", "ConfigMap", True),
    ("v1", "secrets", "Secret", True),
    ("v1", "serviceaccounts", "ServiceAccount", True),
    ("v1", "services", "Service", True),
    ("v1", "pods", "Pod", True),
    ("v1", "nodes", "Node", False),
    ("v1", "resourcequotas", "ResourceQuota", True),
    ("apps/v1", "deployments", "Deployment", True),
    ("batch/v1", "jobs", "Job", True),
    ("batch/v1", "cronjobs", "CronJob", True),
    ("rbac.authorization.k8s.io/v1", "roles", "Role", True),
    ("rbac.authorization.k8s.io/v1", "rolebindings", "RoleBinding", True),
    ("rbac.authorization.k8s.io/v1", "clusterroles", "ClusterRole", False),
    ("rbac.authorization.k8s.io/v1", "clusterrolebindings", "ClusterRoleBinding", False),
    ("authorization.k8s.io/v1", "selfsubjectaccessreviews", "SelfSubjectAccessReview", False),
    ("authorization.k8s.io/v1", "selfsubjectrulesreviews", "SelfSubjectRulesReview", False),
    ("authentication.k8s.io/v1", "selfsubjectreviews", "SelfSubjectReview", False),
    ("scheduling.k8s.io/v1", "priorityclasses", "PriorityClass", False),
    ("policy/v1", "poddisruptionbudgets", "PodDisruptionBudget", True),
    ("networking.k8s.io/v1", "ingresses", "Ingress", True),
]
# (groupVersion, resource/subresource, group, version, kind)
SUBRESOURCES = [
    ("v1", "pods/eviction", "policy", "v1", "Eviction"),
    ("v1", "serviceaccounts/token", "authentication.k8s.io", "v1", "TokenRequest"),
]
KIND_BY_RESOURCE = {r: (gv, k) for gv, r, k, _ in RESOURCES} | {
    r.split("/")[1]: (f"{g}/{v}", k) for _, r, g, v, k in SUBRESOURCES
}
# Replies to reviews carry a status so that kubectl prints it and exits 0.
REVIEW_STATUS = {"allowed": True, "token": "t0k3n", "userInfo": {"username": "alice"}}

CRONJOB = Path(__file__).with_name("protobuf_cronjob.json")


@dataclasses.dataclass(frozen=True)
class Case:
    id: str
    command: str  # kubectl arguments, shell-quoted; {files} is a directory of sample files
    dry_run: bool = True  # False: compare with the JSON body kubectl 1.31 sends


CASES = [
    Case("namespace", "create namespace demo"),
    Case(
        "configmap",
        "create configmap cm --from-literal=a=b --from-literal=empty= "
        "--from-file=bin={files}/blob.bin --from-file={files}/notes.txt",
    ),
    Case(
        "secret-generic",
        "create secret generic s --from-literal=user=admin --from-file=key={files}/blob.bin "
        "--type=example.com/custom",
    ),
    Case(
        "secret-docker-registry",
        "create secret docker-registry reg --docker-server=r.example.com --docker-username=u "
        "--docker-password=p --docker-email=u@example.com",
    ),
    Case("serviceaccount", "create serviceaccount sa"),
    Case("service-clusterip", "create service clusterip web --tcp=80:8080,443:https"),
    Case("service-headless", "create service clusterip hl --clusterip=None"),
    Case("service-nodeport", "create service nodeport np --tcp=80 --node-port=30080"),
    Case("service-externalname", "create service externalname ext --external-name=x.io"),
    Case("deployment", "create deployment web --image=nginx --replicas=2 --port=80"),
    Case("deployment-images", "create deployment multi --image=nginx --image=busybox"),
    Case("deployment-command", "create deployment cmd --image=busybox -- sleep 1"),
    Case("job", "create job j --image=busybox -- echo hi"),
    Case("job-from-cronjob", "create job manual --from=cronjob/nightly"),
    Case(
        "cronjob",
        "create cronjob cj --image=busybox '--schedule=*/5 * * * *' --restart=OnFailure -- date",
    ),
    Case(
        "role", "create role r --verb=get,list --resource=pods,deployments.apps --resource-name=a"
    ),
    Case("clusterrole", "create clusterrole cr --verb=get '--non-resource-url=/logs/*'"),
    Case(
        "clusterrole-aggregated", "create clusterrole agg --aggregation-rule=example.com/agg=true"
    ),
    Case(
        "rolebinding",
        "create rolebinding rb --role=r --user=alice --group=devs --serviceaccount=default:sa",
    ),
    Case("clusterrolebinding", "create clusterrolebinding crb --clusterrole=cr --user=bob"),
    Case(
        "quota",
        "create quota q --hard=pods=2,requests.cpu=500m,limits.memory=1Gi --scopes=NotBestEffort",
    ),
    Case(
        "priorityclass",
        "create priorityclass pc --value=-5 --description=low --preemption-policy=Never",
    ),
    Case("pdb-percent", "create poddisruptionbudget pdb --selector=app=web --min-available=50%"),
    Case("pdb-int", "create poddisruptionbudget pdb2 --selector=app=web --max-unavailable=1"),
    Case(
        "ingress",
        "create ingress ing --class=nginx '--rule=foo.com/bar*=svc:http,tls=sec' "
        "--default-backend=def:80",
    ),
    Case("can-i", "auth can-i get pods", dry_run=False),
    Case(
        "can-i-subresource",
        "auth can-i update deployments.apps --subresource=scale -n kube-system",
        dry_run=False,
    ),
    Case("can-i-non-resource", "auth can-i get /logs", dry_run=False),
    Case("can-i-list", "auth can-i --list -n demo", dry_run=False),
    Case("whoami", "auth whoami", dry_run=False),
    Case(
        "token",
        "create token sa --audience=a --audience=b --duration=10m --bound-object-kind=Pod "
        "--bound-object-name=p --bound-object-uid=0a1b",
        dry_run=False,
    ),
    # drain deletes with a DeleteOptions body when evictions are off (evictions are sent as JSON)
    Case("drain-delete", "drain n1 --disable-eviction --grace-period=7", dry_run=False),
    Case(
        "debug-copy",
        "debug rich --copy-to=rich-copy --image=busybox --container=dbg",
        dry_run=False,
    ),
]


def kubectl_binary(version: str) -> str | None:
    """kubectl.<version>, on PATH or beside the real file of the `kubectl` dispatcher."""
    found = shutil.which(f"kubectl.{version}")
    if found:
        return found
    dispatcher = shutil.which("kubectl")
    if dispatcher:
        candidate = Path(dispatcher).resolve().parent / f"kubectl.{version}"
        if candidate.exists():
            return str(candidate)
    return None


@dataclasses.dataclass
class Recorded:
    content_type: str
    body: bytes


class FakeServer:
    """Discovery, a few objects to read, and a recorder for request bodies, keyed by run prefix."""

    def __init__(self) -> None:
        self.writes: dict[str, list[Recorded]] = {}
        self.cronjob = json.loads(CRONJOB.read_text())
        template = self.cronjob["spec"]["jobTemplate"]["spec"]["template"]
        # The pod that `debug --copy-to` copies: kubectl 1.31 (the JSON oracle) must know all of
        # it, so leave out the pod fields added in 1.32.
        pod_spec = {k: v for k, v in template["spec"].items() if k != "resources"}
        pod_spec["securityContext"] = {
            k: v for k, v in pod_spec["securityContext"].items() if k != "seLinuxChangePolicy"
        }
        self.objects = {
            "/apis/batch/v1/namespaces/default/cronjobs/nightly": self.cronjob,
            "/api/v1/namespaces/default/pods/rich": {
                "kind": "Pod", "apiVersion": "v1",
                "metadata": {"name": "rich", "namespace": "default"},
                "spec": pod_spec, "status": {"phase": "Running"},
            },
            "/api/v1/nodes/n1": {"kind": "Node", "apiVersion": "v1", "metadata": {"name": "n1"}},
            "/api/v1/pods": {  # what drain lists on node n1
                "kind": "PodList", "apiVersion": "v1", "metadata": {"resourceVersion": "1"},
                "items": [{
                    "metadata": {"name": "victim", "namespace": "default", "ownerReferences": [
                        {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "u1",
                         "controller": True},
                    ]},
                    "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "i"}]},
                }],
            },
        }  # fmt: skip

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_route("*", "/{run}/{path:.*}", self.handle)
        return app

    async def handle(self, request: web.Request) -> web.Response:
        run, path = request.match_info["run"], "/" + request.match_info["path"]
        if request.method in ("POST", "DELETE"):
            body = await request.read()
            recorded = Recorded(request.headers.get("Content-Type", ""), body)
            self.writes.setdefault(run, []).append(recorded)
            if request.method == "DELETE":
                return web.json_response(
                    {"kind": "Status", "apiVersion": "v1", "status": "Success"}
                )
            api_version, kind = KIND_BY_RESOURCE[path.rstrip("/").split("/")[-1]]
            reply = {"kind": kind, "apiVersion": api_version, "metadata": {"name": "x"}}
            return web.json_response({**reply, "status": REVIEW_STATUS}, status=201)
        if path == "/version":
            return web.json_response({"major": "1", "minor": "33", "gitVersion": "v1.33.0"})
        if path == "/openapi/v2":  # lets client-side validation pass without a schema
            return web.Response(
                body=b"", content_type="application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
            )
        if path in self.objects:  # drain cordons with a PATCH that returns the node
            return web.json_response(self.objects[path])
        document = self.discovery(path)
        if document is None:
            return web.json_response({"kind": "Status", "code": 404}, status=404)
        return web.json_response(document)

    @staticmethod
    def discovery(path: str) -> dict[str, Any] | None:
        versions = sorted({gv for gv, *_ in RESOURCES if "/" in gv})
        if path == "/api":
            return {"kind": "APIVersions", "versions": ["v1"]}
        if path == "/apis":
            groups = [
                {
                    "name": gv.split("/")[0],
                    "versions": [{"groupVersion": gv, "version": "v1"}],
                    "preferredVersion": {"groupVersion": gv, "version": "v1"},
                }
                for gv in versions
            ]
            return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}
        for gv in ["v1", *versions]:
            if path == ("/api/v1" if gv == "v1" else f"/apis/{gv}"):
                resources = [
                    {"name": r, "singularName": k.lower(), "namespaced": ns, "kind": k}
                    for g, r, k, ns in RESOURCES
                    if g == gv
                ]
                resources += [
                    {
                        "name": r,
                        "singularName": "",
                        "namespaced": True,
                        "kind": k,
                        "group": group,
                        "version": v,
                    }
                    for g, r, group, v, k in SUBRESOURCES
                    if g == gv
                ]
                for resource in resources:
                    resource["verbs"] = ["create", "get", "list", "patch"]
                return {"kind": "APIResourceList", "groupVersion": gv, "resources": resources}
        return None


@dataclasses.dataclass
class Outcome:
    writes: list[Recorded]
    returncode: int
    stdout: str
    stderr: str


async def run_all(jobs: dict[str, tuple[str, tuple[str, ...]]]) -> dict[str, Outcome]:
    """Run each (binary, args) against one fake server; at most a few kubectls at a time."""
    server = FakeServer()
    runner = web.AppRunner(server.app())
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    limit = asyncio.Semaphore(max(2, os.cpu_count() or 2))

    async def run(run_id: str, binary: str, args: tuple[str, ...]) -> Outcome:
        async with limit:
            with tempfile.TemporaryDirectory() as home:
                proc = await asyncio.create_subprocess_exec(
                    binary, f"--server=http://127.0.0.1:{port}/{run_id}", *args,
                    env={"HOME": home, "PATH": os.environ.get("PATH", "")},
                    stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
                )  # fmt: skip
                out, err = await asyncio.wait_for(proc.communicate(), 60)
        code = proc.returncode if proc.returncode is not None else -1
        return Outcome(server.writes.get(run_id, []), code, out.decode(), err.decode())

    try:
        ids = list(jobs)
        outcomes = await asyncio.gather(*(run(f"r{i}", *jobs[key]) for i, key in enumerate(ids)))
    finally:
        await runner.cleanup()
    return dict(zip(ids, outcomes, strict=True))


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Outcome]:
    binaries = {v: kubectl_binary(v) for v in (*PROTOBUF_VERSIONS, JSON_VERSION)}
    missing = [v for v, b in binaries.items() if b is None]
    if missing:
        pytest.skip(f"kubectl {', '.join(missing)} not installed")
    files = tmp_path_factory.mktemp("files")
    (files / "blob.bin").write_bytes(bytes(range(256)))  # not UTF-8: lands in binaryData
    (files / "notes.txt").write_text("line one\nline two\n")
    jobs: dict[str, tuple[str, tuple[str, ...]]] = {}
    for case in CASES:
        args = tuple(shlex.split(case.command.replace("{files}", str(files))))
        for version in PROTOBUF_VERSIONS:
            jobs[f"{version}/{case.id}"] = (str(binaries[version]), args)
            if case.dry_run:
                cut = _split(args)
                dry = (*args[:cut], "--dry-run=client", "-o", "json", *args[cut:])
                jobs[f"{version}/{case.id}/dry-run"] = (str(binaries[version]), dry)
        if not case.dry_run:
            jobs[f"{JSON_VERSION}/{case.id}"] = (str(binaries[JSON_VERSION]), args)
    return asyncio.run(run_all(jobs))


def _split(args: tuple[str, ...]) -> int:
    """Where flags may still go: before a `--` that starts the container command."""
    return args.index("--") if "--" in args else len(args)


def _only_write(outcome: Outcome, content_type: str) -> bytes:
    assert outcome.returncode == 0, outcome.stderr
    assert len(outcome.writes) == 1, outcome.writes
    assert outcome.writes[0].content_type == content_type
    return outcome.writes[0].body


@pytest.mark.parametrize("version", PROTOBUF_VERSIONS)
@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_decodes_what_kubectl_sends(outcomes: dict[str, Outcome], version: str, case: Case) -> None:
    body = _only_write(outcomes[f"{version}/{case.id}"], protobuf.PROTOBUF_CONTENT_TYPE)
    if case.dry_run:
        expected = outcomes[f"{version}/{case.id}/dry-run"]
        assert expected.returncode == 0, expected.stderr
        want = json.loads(expected.stdout)
    else:
        want = json.loads(_only_write(outcomes[f"{JSON_VERSION}/{case.id}"], "application/json"))
    assert protobuf.decode_object(body) == want


def test_rich_pod_template_survives(outcomes: dict[str, Outcome]) -> None:
    """The job copied from the served CronJob keeps every pod field we put there."""
    body = _only_write(outcomes["1.33/job-from-cronjob"], protobuf.PROTOBUF_CONTENT_TYPE)
    served = json.loads(CRONJOB.read_text())["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    decoded = protobuf.decode_object(body)["spec"]["template"]["spec"]
    assert _paths(served) <= _paths(decoded)


def _paths(value: Any, prefix: str = "") -> set[str]:
    if isinstance(value, dict):
        return {p for k, v in value.items() for p in _paths(v, f"{prefix}.{k}")} | {prefix}
    if isinstance(value, list):
        return {p for i, v in enumerate(value) for p in _paths(v, f"{prefix}[{i}]")} | {prefix}
    return {prefix}
