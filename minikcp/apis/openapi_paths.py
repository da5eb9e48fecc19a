"""The `paths` of OpenAPI documents: one entry per REST endpoint of each served resource type.

Operations follow upstream's generated specs (api/openapi-spec/v3 in kubernetes/kubernetes):
operationId, tags, x-kubernetes-action, x-kubernetes-group-version-kind, inline query parameters
and per-content-type responses. kubectl relies on two details: the PATCH operation of a kind lists
the `fieldValidation` parameter (server-side validation is then assumed), and its requestBody lists
`application/strategic-merge-patch+json` only for built-in kinds (else kubectl sends merge patches).
The same description of an endpoint yields a v3 operation or a swagger 2.0 one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from minikcp.apis.catalog import ResourceType

META = "io.k8s.apimachinery.pkg.apis.meta.v1."
PATCH_TYPES_CRD = (
    "application/apply-patch+yaml",
    "application/json-patch+json",
    "application/merge-patch+json",
)
PATCH_TYPES_BUILTIN = (*PATCH_TYPES_CRD, "application/strategic-merge-patch+json")

_Q: dict[str, tuple[str, str]] = {
    # name: (type, description)
    "allowWatchBookmarks": ("boolean", "Ask for BOOKMARK events in a watch."),
    "continue": ("string", "Continue token from a previous list response with limit."),
    "dryRun": ("string", "When present (All), the request is processed but not persisted."),
    "fieldManager": ("string", "Name of the actor making the change, for managedFields."),
    "fieldSelector": ("string", "Restrict results by field (metadata.name, metadata.namespace)."),
    "fieldValidation": (
        "string",
        "How to handle unknown and duplicate fields in the request body: Ignore drops them, Warn "
        "drops them with a warning header, Strict rejects the request with a BadRequest error.",
    ),
    "force": ("boolean", "Force an apply request to take conflicting fields."),
    "gracePeriodSeconds": ("integer", "Seconds before the object is deleted; 0 is immediate."),
    "labelSelector": ("string", "Restrict results by label."),
    "limit": ("integer", "Maximum number of items in a list response."),
    "orphanDependents": ("boolean", "Deprecated: use propagationPolicy."),
    "pretty": ("string", "If 'true', the output is pretty printed."),
    "propagationPolicy": ("string", "Garbage collection policy: Orphan, Background or Foreground."),
    "resourceVersion": ("string", "Constrain which resource versions a list or watch may serve."),
    "resourceVersionMatch": ("string", "How resourceVersion applies to a list."),
    "sendInitialEvents": ("boolean", "Start a watch with synthetic events for the current state."),
    "timeoutSeconds": ("integer", "Timeout for the list or watch call."),
    "watch": ("boolean", "Watch for changes instead of listing."),
}
_LIST_PARAMS = (
    "allowWatchBookmarks",
    "continue",
    "fieldSelector",
    "labelSelector",
    "limit",
    "resourceVersion",
    "resourceVersionMatch",
    "sendInitialEvents",
    "timeoutSeconds",
    "watch",
)
_WRITE_PARAMS = ("dryRun", "fieldManager", "fieldValidation")
_DELETE_PARAMS = ("dryRun", "gracePeriodSeconds", "orphanDependents", "propagationPolicy")
_DELETE_COLLECTION_PARAMS = (
    "continue",
    "dryRun",
    "fieldSelector",
    "gracePeriodSeconds",
    "labelSelector",
    "limit",
    "orphanDependents",
    "propagationPolicy",
    "resourceVersion",
    "resourceVersionMatch",
    "sendInitialEvents",
    "timeoutSeconds",
)


@dataclass(frozen=True, slots=True)
class Operation:
    method: str  # get, post, put, patch, delete
    action: str  # x-kubernetes-action
    operation_id: str
    description: str
    kind: tuple[str, str, str] = ("", "", "")  # group, version, kind
    params: tuple[str, ...] = ()
    tag: str = ""
    body: str = ""  # definition of the request body
    patch_types: tuple[str, ...] = ()
    response: str = ""  # definition of the response
    codes: tuple[tuple[str, str], ...] = (("200", "OK"),)
    stream: bool = False  # list/watch responses can stream
    protobuf: bool = True


def group_camel(group: str) -> str:
    """Upstream's operationId infix: "" -> "Core", "rbac.authorization.k8s.io" ->
    "RbacAuthorization"."""
    if not group:
        return "Core"
    parts = group.removesuffix(".k8s.io").split(".")
    return "".join(p[:1].upper() + p[1:] for p in parts)


def tag(group: str, version: str) -> str:
    camel = group_camel(group)
    return f"{camel[:1].lower()}{camel[1:]}_{version}"


def prefix(rt: ResourceType) -> str:
    return f"/apis/{rt.group}/{rt.version}" if rt.group else f"/api/{rt.version}"


def resource_paths(rt: ResourceType) -> dict[str, list[Operation]]:
    """Path template -> operations for one resource type (and its subresources)."""
    base = prefix(rt)
    gv = f"{group_camel(rt.group)}{rt.version[:1].upper()}{rt.version[1:]}"
    scope = "Namespaced" if rt.namespaced else ""
    ns = "/namespaces/{namespace}" if rt.namespaced else ""
    definition, list_definition = rt.definition, _list_definition(rt)
    verbs = set(rt.verbs)
    collection, item = f"{base}{ns}/{rt.plural}", f"{base}{ns}/{rt.plural}/{{name}}"
    name = f"{gv}{scope}{rt.kind}"
    paths: dict[str, list[Operation]] = {}

    def op(path: str, method: str, action: str, operation_id: str, text: str, **kw: Any) -> None:
        kw.setdefault("kind", (rt.group, rt.version, rt.kind))
        kw.setdefault("params", ())
        operation = Operation(
            method,
            action,
            operation_id,
            text,
            tag=tag(rt.group, rt.version),
            protobuf=rt.builtin,
            **kw,
        )
        paths.setdefault(path, []).append(operation)

    listing = {"params": _LIST_PARAMS, "response": list_definition, "stream": True}
    written = {"params": _WRITE_PARAMS, "body": definition, "response": definition}
    deleting = {"body": META + "DeleteOptions", "response": META + "Status"}
    if "list" in verbs:
        op(
            collection,
            "get",
            "list",
            f"list{name}",
            f"list or watch objects of kind {rt.kind}",
            **listing,
        )
        if rt.namespaced:
            all_ns = f"list{gv}{rt.kind}ForAllNamespaces"
            op(
                f"{base}/{rt.plural}",
                "get",
                "list",
                all_ns,
                f"list or watch objects of kind {rt.kind}",
                **listing,
            )
    if "create" in verbs:
        op(
            collection,
            "post",
            "post",
            f"create{name}",
            f"create {_article(rt.kind)}",
            codes=_CREATED_ACCEPTED,
            **written,
        )
    if "deletecollection" in verbs:
        delete_collection = f"delete{gv}Collection{scope}{rt.kind}"
        op(
            collection,
            "delete",
            "deletecollection",
            delete_collection,
            f"delete collection of {rt.kind}",
            params=_DELETE_COLLECTION_PARAMS,
            **deleting,
        )
    if "get" in verbs:
        op(item, "get", "get", f"read{name}", f"read the specified {rt.kind}", response=definition)
    if "update" in verbs:
        op(
            item,
            "put",
            "put",
            f"replace{name}",
            f"replace the specified {rt.kind}",
            codes=_CREATED,
            **written,
        )
    if "patch" in verbs:
        op(
            item,
            "patch",
            "patch",
            f"patch{name}",
            f"partially update the specified {rt.kind}",
            **_patch(rt, definition),
        )
    if "delete" in verbs:
        op(
            item,
            "delete",
            "delete",
            f"delete{name}",
            f"delete {_article(rt.kind)}",
            params=_DELETE_PARAMS,
            codes=_ACCEPTED,
            **deleting,
        )
    if "watch" in verbs:
        watching = {"params": _LIST_PARAMS, "response": META + "WatchEvent", "stream": True}
        deprecated = "deprecated: use the 'watch' parameter with a list operation instead"
        changes = f"watch individual changes to a list of {rt.kind}. {deprecated}."
        op(
            f"{base}/watch{ns}/{rt.plural}",
            "get",
            "watchlist",
            f"watch{name}List",
            changes,
            **watching,
        )
        one = (
            f"watch changes to an object of kind {rt.kind}. {deprecated}, "
            "filtered to a single item with the 'fieldSelector' parameter."
        )
        op(
            f"{base}/watch{ns}/{rt.plural}/{{name}}",
            "get",
            "watch",
            f"watch{name}",
            one,
            **watching,
        )
        if rt.namespaced:
            all_ns = f"watch{gv}{rt.kind}ListForAllNamespaces"
            op(f"{base}/watch/{rt.plural}", "get", "watchlist", all_ns, changes, **watching)
    for sub in rt.subresources:
        path = f"{item}/{sub.name}"
        sub_definition = _sub_definition(rt, sub.kind, sub.group, sub.version)
        sub_name = f"{name}{sub.name[:1].upper()}{sub.name[1:]}"
        what = f"{sub.name} of the specified {rt.kind}"
        kind = (sub.group, sub.version, sub.kind)
        if "get" in sub.verbs:
            op(
                path,
                "get",
                "get",
                f"read{sub_name}",
                f"read {what}",
                kind=kind,
                response=sub_definition,
            )
        if "update" in sub.verbs:
            body = {"params": _WRITE_PARAMS, "body": sub_definition, "response": sub_definition}
            op(
                path,
                "put",
                "put",
                f"replace{sub_name}",
                f"replace {what}",
                kind=kind,
                codes=_CREATED,
                **body,
            )
        if "patch" in sub.verbs:
            op(
                path,
                "patch",
                "patch",
                f"patch{sub_name}",
                f"partially update {what}",
                kind=kind,
                **_patch(rt, sub_definition),
            )
    return paths


_CREATED = (("200", "OK"), ("201", "Created"))
_ACCEPTED = (("200", "OK"), ("202", "Accepted"))
_CREATED_ACCEPTED = (("200", "OK"), ("201", "Created"), ("202", "Accepted"))


def _patch(rt: ResourceType, definition: str) -> dict[str, Any]:
    return {
        "params": (*_WRITE_PARAMS, "force"),
        "body": META + "Patch",
        "patch_types": PATCH_TYPES_BUILTIN if rt.builtin else PATCH_TYPES_CRD,
        "response": definition,
        "codes": _CREATED,
    }


def _article(kind: str) -> str:
    return f"an {kind}" if kind[:1] in "AEIOU" else f"a {kind}"


def _list_definition(rt: ResourceType) -> str:
    return f"{rt.definition.rsplit('.', 1)[0]}.{rt.list_kind}" if rt.list_kind else rt.definition


def _sub_definition(rt: ResourceType, kind: str, group: str, version: str) -> str:
    if (group, version, kind) == (rt.group, rt.version, rt.kind):
        return rt.definition
    if (group, version, kind) == ("autoscaling", "v1", "Scale"):
        return "io.k8s.api.autoscaling.v1.Scale"
    return rt.definition


def discovery_path(group: str, version: str) -> tuple[str, Operation]:
    """The `GET /apis/<g>/<v>/` operation listing the resources of the group/version."""
    base = f"/apis/{group}/{version}/" if group else f"/api/{version}/"
    gv = f"{group_camel(group)}{version[:1].upper()}{version[1:]}"
    operation = Operation(
        "get",
        "",
        f"get{gv}APIResources",
        "get available resources",
        ("", "", ""),
        (),
        tag=tag(group, version),
        response=META + "APIResourceList",
    )
    return base, operation


# -- rendering ----------------------------------------------------------------------------------


def _content_types(operation: Operation) -> list[str]:
    types = ["application/json", "application/yaml"]
    if operation.stream:
        types.append("application/json;stream=watch")
    if operation.protobuf:
        types.append("application/vnd.kubernetes.protobuf")
        if operation.stream:
            types.append("application/vnd.kubernetes.protobuf;stream=watch")
    return sorted(types)


def _gvk_ext(operation: Operation) -> dict[str, str]:
    group, version, kind = operation.kind
    return {"group": group, "kind": kind, "version": version}


def _path_params(path: str, kind: str) -> list[dict[str, Any]]:
    params = []
    if "{name}" in path:
        params.append(("name", f"name of the {kind}"))
    if "{namespace}" in path:
        params.append(("namespace", "object name and auth scope, such as for teams and projects"))
    return [{"name": n, "in": "path", "required": True, "description": d} for n, d in params]


def v3_path_item(
    path: str, operations: list[Operation], ref_prefix: str = "#/components/schemas/"
) -> dict[str, Any]:
    item: dict[str, Any] = {}
    for operation in operations:
        out: dict[str, Any] = {
            "tags": [operation.tag],
            "description": operation.description,
            "operationId": operation.operation_id,
        }
        if operation.params:
            out["parameters"] = [
                {
                    "name": p,
                    "in": "query",
                    "description": _Q[p][1],
                    "schema": {"type": _Q[p][0], "uniqueItems": True},
                }
                for p in operation.params
            ]
        if operation.body:
            schema = {"$ref": ref_prefix + operation.body}
            types = operation.patch_types or ("*/*",)
            out["requestBody"] = {"content": {t: {"schema": schema} for t in types}}
            if operation.method != "delete":
                out["requestBody"]["required"] = True
        responses: dict[str, Any] = {}
        for code, text in operation.codes:
            schema = {"$ref": ref_prefix + operation.response}
            responses[code] = {
                "description": text,
                "content": {t: {"schema": schema} for t in _content_types(operation)},
            }
        responses["401"] = {"description": "Unauthorized"}
        out["responses"] = responses
        if operation.action:
            out["x-kubernetes-action"] = operation.action
            out["x-kubernetes-group-version-kind"] = _gvk_ext(operation)
        item[operation.method] = out
    sample = operations[0]
    params = _path_params(path, sample.kind[2])
    for p in params:
        p["schema"] = {"type": "string", "uniqueItems": True}
    params.append(
        {
            "name": "pretty",
            "in": "query",
            "description": _Q["pretty"][1],
            "schema": {"type": "string", "uniqueItems": True},
        }
    )
    item["parameters"] = params
    return item


def v2_path_item(path: str, operations: list[Operation]) -> dict[str, Any]:
    item: dict[str, Any] = {}
    for operation in operations:
        out: dict[str, Any] = {
            "description": operation.description,
            "consumes": list(operation.patch_types or ("*/*",)),
            "produces": _content_types(operation),
            "schemes": ["https"],
            "tags": [operation.tag],
            "operationId": operation.operation_id,
        }
        params: list[dict[str, Any]] = []
        if operation.body:
            params.append(
                {
                    "name": "body",
                    "in": "body",
                    "required": operation.method != "delete",
                    "schema": {"$ref": "#/definitions/" + operation.body},
                }
            )
        params.extend(
            {
                "uniqueItems": True,
                "type": _Q[p][0],
                "description": _Q[p][1],
                "name": p,
                "in": "query",
            }
            for p in operation.params
        )
        if params:
            out["parameters"] = params
        responses: dict[str, Any] = {
            code: {"description": text, "schema": {"$ref": "#/definitions/" + operation.response}}
            for code, text in operation.codes
        }
        responses["401"] = {"description": "Unauthorized"}
        out["responses"] = responses
        if operation.action:
            out["x-kubernetes-action"] = operation.action
            out["x-kubernetes-group-version-kind"] = _gvk_ext(operation)
        item[operation.method] = out
    params = [
        dict(p, type="string", uniqueItems=True) for p in _path_params(path, operations[0].kind[2])
    ]
    params.append(
        {
            "uniqueItems": True,
            "type": "string",
            "description": _Q["pretty"][1],
            "name": "pretty",
            "in": "query",
        }
    )
    item["parameters"] = params
    return item
