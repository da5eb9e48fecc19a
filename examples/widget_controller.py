"""A provider's controller on its APIExport's virtual workspace, with the official Python client.

It lists and watches Widgets of every consumer through `<url>/clusters/*` and writes each one's
status (`observedSize`, `phase: Ready`) in its own consumer through `<url>/clusters/<cluster>`,
the cluster named by the object's `kcp.io/cluster` annotation. It stops after reconciling
`--count` widgets (or after `--timeout` seconds).

    python examples/widget_controller.py --kubeconfig admin.kubeconfig --url <endpoint URL> \
        --count 4
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from kubernetes import client, config, watch

GROUP, VERSION, PLURAL = "example.kcp.io", "v1", "widgets"


def objects_api(kubeconfig: str, url: str) -> client.CustomObjectsApi:
    api = config.new_client_from_config(config_file=kubeconfig)
    api.configuration.host = url
    return client.CustomObjectsApi(api)


def reconcile(kubeconfig: str, url: str, widget: dict[str, Any]) -> bool:
    """Writes the widget's status in its consumer; False if it was already up to date."""
    meta, size = widget["metadata"], widget.get("spec", {}).get("size", 1)
    if widget.get("status", {}).get("observedSize") == size:
        return False
    cluster = meta["annotations"]["kcp.io/cluster"]
    objects_api(kubeconfig, f"{url}/clusters/{cluster}").patch_namespaced_custom_object_status(
        GROUP,
        VERSION,
        meta["namespace"],
        PLURAL,
        meta["name"],
        {"status": {"observedSize": size, "phase": "Ready"}},
    )
    print(f"reconciled {cluster}/{meta['namespace']}/{meta['name']} (size {size})")
    return True


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("--url", required=True, help="the APIExportEndpointSlice's URL")
    parser.add_argument("--count", type=int, default=1)
    parser.add_argument("--timeout", type=float, default=60)
    args = parser.parse_args()
    everywhere = objects_api(args.kubeconfig, f"{args.url}/clusters/*")
    deadline = time.monotonic() + args.timeout
    done: set[str] = set()
    listed = everywhere.list_cluster_custom_object(GROUP, VERSION, PLURAL)
    for widget in listed["items"]:
        reconcile(args.kubeconfig, args.url, widget)
        done.add(widget["metadata"]["uid"])
    version = listed["metadata"]["resourceVersion"]
    while len(done) < args.count and time.monotonic() < deadline:
        stream = watch.Watch()
        for event in stream.stream(
            everywhere.list_cluster_custom_object,
            GROUP,
            VERSION,
            PLURAL,
            resource_version=version,
            allow_watch_bookmarks=True,
            timeout_seconds=max(1, int(deadline - time.monotonic())),
        ):
            widget = event["object"]
            version = widget["metadata"]["resourceVersion"]
            if event["type"] in ("ADDED", "MODIFIED"):
                reconcile(args.kubeconfig, args.url, widget)
                done.add(widget["metadata"]["uid"])
            if len(done) >= args.count:
                stream.stop()
    print(f"{len(done)} widgets reconciled")
    return 0 if len(done) >= args.count else 1


if __name__ == "__main__":
    sys.exit(main())
