"""The official Python `kubernetes` client against a real minikcp server."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes import client, config, watch
from kubernetes.client.rest import ApiException

from tests import server_process
from tests.server_process import ServerProcess

pytestmark = pytest.mark.e2e


@pytest.fixture
def core(server: ServerProcess, cluster: str) -> Iterator[client.CoreV1Api]:
    api_client = config.new_client_from_config(config_file=str(server.kubeconfig(cluster)))
    try:
        yield client.CoreV1Api(api_client)
    finally:
        api_client.close()


def _cm(name: str, **data: str) -> client.V1ConfigMap:
    return client.V1ConfigMap(metadata=client.V1ObjectMeta(name=name), data=data)


def test_crud(core: client.CoreV1Api) -> None:
    created = core.create_namespaced_config_map("default", _cm("one", a="1"))
    assert created.metadata.uid and created.metadata.resource_version
    got = core.read_namespaced_config_map("one", "default")
    assert got.data == {"a": "1"}
    got.data["b"] = "2"
    replaced = core.replace_namespaced_config_map("one", "default", got)
    assert int(replaced.metadata.resource_version) > int(created.metadata.resource_version)
    stale = core.read_namespaced_config_map("one", "default")
    stale.metadata.resource_version = created.metadata.resource_version
    with pytest.raises(ApiException) as conflict:
        core.replace_namespaced_config_map("one", "default", stale)
    assert conflict.value.status == 409
    assert "the object has been modified" in conflict.value.body
    patched = core.patch_namespaced_config_map("one", "default", {"data": {"c": "3"}})
    assert patched.data == {"a": "1", "b": "2", "c": "3"}
    listed = core.list_namespaced_config_map("default")
    # Every namespace holds the root CA ConfigMap, as root-ca-cert-publisher writes it.
    assert [i.metadata.name for i in listed.items] == ["kube-root-ca.crt", "one"]
    status = core.delete_namespaced_config_map("one", "default")
    # The client returns the Status as a model or as a plain dict, depending on its version.
    as_dict = status if isinstance(status, dict) else status.to_dict()
    assert as_dict["status"] == "Success"
    assert as_dict["details"]["name"] == "one"
    with pytest.raises(ApiException) as missing:
        core.read_namespaced_config_map("one", "default")
    assert missing.value.status == 404
    assert '"reason":"NotFound"' in missing.value.body.replace(" ", "")


def test_generate_name_and_paging(core: client.CoreV1Api) -> None:
    names = set()
    for _ in range(7):
        obj = client.V1ConfigMap(metadata=client.V1ObjectMeta(generate_name="gen-"))
        names.add(core.create_namespaced_config_map("default", obj).metadata.name)
    assert len(names) == 7 and all(n.startswith("gen-") and len(n) == 9 for n in names)
    seen: list[str] = []
    page = core.list_namespaced_config_map("default", limit=3)
    revision = page.metadata.resource_version
    seen += [i.metadata.name for i in page.items]
    # A write between pages must not show up: every page is read at the first page's revision.
    core.create_namespaced_config_map("default", _cm("gen-zzzzz"))
    while page.metadata._continue:
        page = core.list_namespaced_config_map(
            "default", limit=3, _continue=page.metadata._continue
        )
        assert page.metadata.resource_version == revision
        seen += [i.metadata.name for i in page.items]
    assert sorted(seen) == sorted(names | {"kube-root-ca.crt"})


def test_watch_resumes_exactly_once(core: client.CoreV1Api) -> None:
    start = core.list_namespaced_config_map("default").metadata.resource_version
    changes = [("create", "w1"), ("create", "w2"), ("patch", "w1"), ("delete", "w2")]
    expected = [("ADDED", "w1"), ("ADDED", "w2"), ("MODIFIED", "w1"), ("DELETED", "w2")]

    def apply(kind: str, name: str) -> None:
        if kind == "create":
            core.create_namespaced_config_map("default", _cm(name, v="0"))
        elif kind == "patch":
            core.patch_namespaced_config_map(name, "default", {"data": {"v": "1"}})
        else:
            core.delete_namespaced_config_map(name, "default")

    received: list[tuple[str, str]] = []
    revision = start
    # First connection sees the first two changes, then drops; the second resumes from the last
    # revision it saw and must see the rest, each exactly once.
    for batch in (changes[:2], changes[2:]):
        w = watch.Watch()
        stream = w.stream(
            core.list_namespaced_config_map,
            "default",
            resource_version=revision,
            timeout_seconds=10,
        )
        writer = threading.Thread(target=lambda b=batch: [apply(*c) for c in b])
        writer.start()
        for event in stream:
            received.append((event["type"], event["object"].metadata.name))
            revision = event["object"].metadata.resource_version
            if len(received) in (2, 4):
                w.stop()
                break
        writer.join()
    assert received == expected


def test_isolation_between_clusters(server: ServerProcess, cluster: str) -> None:
    clients = []
    try:
        apis = []
        for name in (cluster, cluster + "b"):
            api_client = config.new_client_from_config(config_file=str(server.kubeconfig(name)))
            clients.append(api_client)
            apis.append(client.CoreV1Api(api_client))
        a, b = apis
        a.create_namespaced_config_map("default", _cm("same", who="a"))
        b.create_namespaced_config_map("default", _cm("same", who="b"))
        assert a.read_namespaced_config_map("same", "default").data == {"who": "a"}
        assert b.read_namespaced_config_map("same", "default").data == {"who": "b"}
        rv = b.list_namespaced_config_map("default").metadata.resource_version
        a.patch_namespaced_config_map("same", "default", {"data": {"who": "a2"}})
        events = list(
            watch.Watch().stream(
                b.list_namespaced_config_map, "default", resource_version=rv, timeout_seconds=1
            )
        )
        assert events == []
    finally:
        for c in clients:
            c.close()


def test_watch_from_compacted_revision_gets_410(tmp_path: Path) -> None:
    proc = server_process.start_server(
        tmp_path,
        extra_args=server_process.COMPACTING_ARGS,
    )
    api_client = config.new_client_from_config(config_file=str(proc.kubeconfig("root")))
    try:
        core = client.CoreV1Api(api_client)
        first = core.create_namespaced_config_map("default", _cm("c0")).metadata.resource_version
        for i in range(1, 40):
            core.create_namespaced_config_map("default", _cm(f"c{i}"))
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            failure: ApiException | None = None
            try:
                list(
                    watch.Watch().stream(
                        core.list_namespaced_config_map,
                        "default",
                        resource_version=first,
                        timeout_seconds=1,
                    )
                )
            except ApiException as exc:
                failure = exc
            if failure is not None:
                assert failure.status == 410
                assert "too old resource version" in (failure.reason or "") + str(failure.body)
                break
            time.sleep(0.2)
        else:
            pytest.fail("the watch from a compacted revision never answered 410")
        # A paged list whose snapshot revision is compacted answers 410 too.
        with pytest.raises(ApiException) as expired:
            core.list_namespaced_config_map(
                "default", resource_version=first, resource_version_match="Exact"
            )
        assert expired.value.status == 410
    finally:
        api_client.close()
        assert proc.stop() == 0
        assert "Traceback" not in proc.log()
