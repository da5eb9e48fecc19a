"""Kubernetes defaulting of built-in kinds, as kube-apiserver applies it before validation.

`apply_defaults(rt, obj)` mutates a decoded object in place. It ports the defaults clients rely on
from pkg/apis/*/v1/defaults.go and their generated `zz_generated.defaults.go` (1.32), plus the few
create-time fields upstream sets in a strategy or that Go serialization always shows:
- Namespace: `status.phase: Active` (the `kubernetes` finalizer is the namespace strategy's);
- Pod: `status.phase: Pending` and `status.qosClass` (pod strategy);
- `resources: {}` on containers (a non-pointer struct Go always serializes).
Objects of other kinds are left alone. The writer of a create owns what this adds (upstream
defaults while decoding, before its field manager runs); what upstream sets after the field
manager is the kinds' strategies' (`registry/strategies/`): a Job's generated selector and
template labels, a Service's IP families and cluster IPs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from minikcp.apis import custom_resources, kcp_kinds, validation_core
from minikcp.apis.catalog import ResourceType

Obj = dict[str, Any]


def nested_dict(parent: Obj, key: str) -> Obj:
    """parent[key] as a dict, created when absent or null."""
    value = parent.get(key)
    if not isinstance(value, dict):
        value = {}
        parent[key] = value
    return value


def _dicts(value: Any) -> list[Obj]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def _default_none(obj: Obj, key: str, value: Any) -> None:
    if obj.get(key) is None:
        obj[key] = value


def _default(obj: Obj, key: str, value: Any) -> None:
    if obj.get(key) in (None, ""):
        obj[key] = value


# -- pod spec ---------------------------------------------------------------------------------


def image_tag(image: str) -> str:
    """The tag kubelet resolves for `image`: "latest" when it has neither tag nor digest."""
    name, _, digest = image.partition("@")
    last = name.rsplit("/", 1)[-1]
    _, colon, tag = last.partition(":")
    if colon:
        return tag
    return "" if digest else "latest"


def _probe(probe: Any) -> None:
    if not isinstance(probe, dict):
        return
    for key, value in (
        ("timeoutSeconds", 1),
        ("periodSeconds", 10),
        ("successThreshold", 1),
        ("failureThreshold", 3),
    ):
        if not probe.get(key):
            probe[key] = value
    _handler(probe)


def _handler(handler: Obj) -> None:
    http_get = handler.get("httpGet")
    if isinstance(http_get, dict):
        _default(http_get, "path", "/")
        _default(http_get, "scheme", "HTTP")
    grpc = handler.get("grpc")
    if isinstance(grpc, dict) and grpc.get("service") is None:
        grpc["service"] = ""


def _container(container: Obj) -> None:
    if not container.get("imagePullPolicy"):
        tag = image_tag(str(container.get("image") or ""))
        container["imagePullPolicy"] = "Always" if tag == "latest" else "IfNotPresent"
    _default(container, "terminationMessagePath", "/dev/termination-log")
    _default(container, "terminationMessagePolicy", "File")
    for port in _dicts(container.get("ports")):
        _default(port, "protocol", "TCP")
    for env in _dicts(container.get("env")):
        value_from = env.get("valueFrom")
        field_ref = value_from.get("fieldRef") if isinstance(value_from, dict) else None
        if isinstance(field_ref, dict):
            _default(field_ref, "apiVersion", "v1")
    nested_dict(container, "resources")
    for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
        _probe(container.get(probe))
    lifecycle = container.get("lifecycle")
    if isinstance(lifecycle, dict):
        for hook in ("postStart", "preStop"):
            if isinstance(lifecycle.get(hook), dict):
                _handler(lifecycle[hook])


_MODE_SOURCES = ("secret", "configMap", "downwardAPI", "projected")


def _volume(volume: Obj) -> None:
    if not any(v is not None for k, v in volume.items() if k != "name"):
        volume["emptyDir"] = {}
    for source in _MODE_SOURCES:
        if isinstance(volume.get(source), dict) and volume[source].get("defaultMode") is None:
            volume[source]["defaultMode"] = 420
    projected = volume.get("projected")
    if isinstance(projected, dict):
        for item in _dicts(projected.get("sources")):
            token = item.get("serviceAccountToken")
            if isinstance(token, dict) and token.get("expirationSeconds") is None:
                token["expirationSeconds"] = 3600
    host_path = volume.get("hostPath")
    if isinstance(host_path, dict) and host_path.get("type") is None:
        host_path["type"] = ""


def pod_spec(spec: Obj) -> None:
    """SetDefaults_PodSpec and the generated per-field defaults under it."""
    _default(spec, "dnsPolicy", "ClusterFirst")
    _default(spec, "restartPolicy", "Always")
    if spec.get("securityContext") is None:
        spec["securityContext"] = {}
    if spec.get("terminationGracePeriodSeconds") is None:
        spec["terminationGracePeriodSeconds"] = 30
    _default(spec, "schedulerName", "default-scheduler")
    for key in ("initContainers", "containers", "ephemeralContainers"):
        for container in _dicts(spec.get(key)):
            _container(container)
    for volume in _dicts(spec.get("volumes")):
        _volume(volume)


def pod_template(template: Any) -> None:
    if isinstance(template, dict):
        pod_spec(nested_dict(template, "spec"))


def _qos_class(spec: Obj) -> str:
    requests_seen = limits_seen = False
    guaranteed = True
    for container in _dicts(spec.get("containers")) + _dicts(spec.get("initContainers")):
        resources = container.get("resources") or {}
        requests, limits = resources.get("requests") or {}, resources.get("limits") or {}
        requests_seen = requests_seen or any(k in requests for k in ("cpu", "memory"))
        limits_seen = limits_seen or any(k in limits for k in ("cpu", "memory"))
        for name in ("cpu", "memory"):
            if name not in limits or requests.get(name, limits[name]) != limits[name]:
                guaranteed = False
    if not requests_seen and not limits_seen:
        return "BestEffort"
    return "Guaranteed" if guaranteed else "Burstable"


def _pod(obj: Obj) -> None:
    spec = nested_dict(obj, "spec")
    for key in ("containers", "initContainers"):
        for container in _dicts(spec.get(key)):
            resources = container.get("resources")
            if isinstance(resources, dict) and isinstance(resources.get("limits"), dict):
                requests = nested_dict(resources, "requests")
                for name, value in resources["limits"].items():
                    requests.setdefault(name, value)
    if spec.get("enableServiceLinks") is None:
        spec["enableServiceLinks"] = True
    if spec.get("hostNetwork"):
        for key in ("containers", "initContainers"):
            for container in _dicts(spec.get(key)):
                for port in _dicts(container.get("ports")):
                    if not port.get("hostPort"):
                        port["hostPort"] = port.get("containerPort")
    pod_spec(spec)
    status = nested_dict(obj, "status")
    _default(status, "phase", "Pending")
    _default(status, "qosClass", _qos_class(spec))


# -- other kinds ------------------------------------------------------------------------------


def _deployment(obj: Obj) -> None:
    spec = nested_dict(obj, "spec")
    if spec.get("replicas") is None:
        spec["replicas"] = 1
    strategy = nested_dict(spec, "strategy")
    _default(strategy, "type", "RollingUpdate")
    if strategy["type"] == "RollingUpdate":
        rolling = nested_dict(strategy, "rollingUpdate")
        for key in ("maxUnavailable", "maxSurge"):
            if rolling.get(key) is None:
                rolling[key] = "25%"
    if spec.get("revisionHistoryLimit") is None:
        spec["revisionHistoryLimit"] = 10
    if spec.get("progressDeadlineSeconds") is None:
        spec["progressDeadlineSeconds"] = 600
    pod_template(nested_dict(spec, "template"))


def _replica_set(obj: Obj) -> None:
    spec = nested_dict(obj, "spec")
    if spec.get("replicas") is None:
        spec["replicas"] = 1
    pod_template(nested_dict(spec, "template"))


def _replication_controller(obj: Obj) -> None:
    """SetDefaults_ReplicationController: selector and labels from the template's labels."""
    spec = nested_dict(obj, "spec")
    template = spec.get("template")
    labels = (template.get("metadata") or {}).get("labels") if isinstance(template, dict) else None
    if labels is not None:
        if not spec.get("selector"):
            spec["selector"] = dict(labels)
        meta = nested_dict(obj, "metadata")
        if not meta.get("labels"):
            meta["labels"] = dict(labels)
    if spec.get("replicas") is None:
        spec["replicas"] = 1
    if isinstance(template, dict):
        pod_template(template)


def _job(obj: Obj) -> None:
    spec = nested_dict(obj, "spec")
    if spec.get("completions") is None and spec.get("parallelism") is None:
        spec["completions"] = 1
    if spec.get("parallelism") is None:
        spec["parallelism"] = 1
    if spec.get("backoffLimit") is None:
        spec["backoffLimit"] = 2**31 - 1 if spec.get("backoffLimitPerIndex") is not None else 6
    _default(spec, "completionMode", "NonIndexed")
    if spec.get("suspend") is None:
        spec["suspend"] = False
    failure_policy = spec.get("podFailurePolicy")
    if isinstance(failure_policy, dict):
        for rule in _dicts(failure_policy.get("rules")):
            for pattern in _dicts(rule.get("onPodConditions")):
                _default(pattern, "status", "True")
    if spec.get("podReplacementPolicy") is None:
        spec["podReplacementPolicy"] = "Failed" if failure_policy else "TerminatingOrFailed"
    if spec.get("manualSelector") is None:
        spec["manualSelector"] = False
    template = nested_dict(spec, "template")
    meta = nested_dict(obj, "metadata")
    template_labels = (template.get("metadata") or {}).get("labels")
    # Upstream gives an unlabelled Job the template's label map itself, not a copy: the labels
    # the job strategy adds to the template later (its generated selector's) show on the Job too.
    if isinstance(template_labels, dict) and template_labels and not meta.get("labels"):
        meta["labels"] = template_labels
    pod_template(template)


def _service(obj: Obj) -> None:
    spec = nested_dict(obj, "spec")
    _default(spec, "sessionAffinity", "None")
    if spec["sessionAffinity"] == "None":
        spec.pop("sessionAffinityConfig", None)
    elif spec["sessionAffinity"] == "ClientIP":
        client_ip = nested_dict(nested_dict(spec, "sessionAffinityConfig"), "clientIP")
        if client_ip.get("timeoutSeconds") is None:
            client_ip["timeoutSeconds"] = 10800
    _default(spec, "type", "ClusterIP")
    service_type = spec["type"]
    for port in _dicts(spec.get("ports")):
        _default(port, "protocol", "TCP")
        if port.get("targetPort") in (None, 0, ""):
            port["targetPort"] = port.get("port")
    if validation_core.externally_accessible(spec):
        _default(spec, "externalTrafficPolicy", "Cluster")
    if spec.get("internalTrafficPolicy") is None and service_type in (
        "ClusterIP",
        "NodePort",
        "LoadBalancer",
    ):
        spec["internalTrafficPolicy"] = "Cluster"
    if service_type == "LoadBalancer" and spec.get("allocateLoadBalancerNodePorts") is None:
        spec["allocateLoadBalancerNodePorts"] = True


def _secret(obj: Obj) -> None:
    _default(obj, "type", "Opaque")


def _namespace(obj: Obj) -> None:
    meta = nested_dict(obj, "metadata")
    if meta.get("name"):
        nested_dict(meta, "labels")["kubernetes.io/metadata.name"] = meta["name"]
    _default(nested_dict(obj, "status"), "phase", "Active")


def _endpoints(obj: Obj) -> None:
    for subset in _dicts(obj.get("subsets")):
        for port in _dicts(subset.get("ports")):
            _default(port, "protocol", "TCP")


def _binding(obj: Obj) -> None:
    _default(nested_dict(obj, "roleRef"), "apiGroup", "rbac.authorization.k8s.io")
    for subject in _dicts(obj.get("subjects")):
        if not subject.get("apiGroup"):
            if subject.get("kind") in ("User", "Group"):
                subject["apiGroup"] = "rbac.authorization.k8s.io"
            elif subject.get("kind") == "ServiceAccount":
                subject["apiGroup"] = ""


def _crd(obj: Obj) -> None:
    spec = nested_dict(obj, "spec")
    names = nested_dict(spec, "names")
    if not names.get("singular") and names.get("kind"):
        names["singular"] = str(names["kind"]).lower()
    if not names.get("listKind") and names.get("kind"):
        names["listKind"] = f"{names['kind']}List"
    _default(nested_dict(spec, "conversion"), "strategy", "None")
    webhook = spec["conversion"].get("webhook")
    if isinstance(webhook, dict):
        service = (webhook.get("clientConfig") or {}).get("service")
        if isinstance(service, dict) and service.get("port") is None:
            service["port"] = 443
    status = nested_dict(obj, "status")
    if not status.get("storedVersions"):
        for version in _dicts(spec.get("versions")):
            if version.get("storage"):
                status["storedVersions"] = [version.get("name")]
                break


def _resources(item: Obj, field: str) -> dict[str, Any]:
    found = item.get(field)
    return dict(found) if isinstance(found, dict) else {}


def _limit_range(obj: Obj) -> None:
    """SetDefaults_LimitRangeItem: a Container item's default limit is its max, its default
    request the default limit, else its min (empty lists are left out, as omitempty does)."""
    spec = obj.get("spec")
    for item in _dicts(spec.get("limits") if isinstance(spec, dict) else None):
        if item.get("type") != "Container":
            continue

        default, request = _resources(item, "default"), _resources(item, "defaultRequest")
        for key, value in _resources(item, "max").items():
            default.setdefault(key, value)
        for key, value in default.items():
            request.setdefault(key, value)
        for key, value in _resources(item, "min").items():
            request.setdefault(key, value)
        if default:
            item["default"] = default
        if request:
            item["defaultRequest"] = request


def _stateful_set(obj: Obj) -> None:
    spec = nested_dict(obj, "spec")
    _default(spec, "podManagementPolicy", "OrderedReady")
    strategy = nested_dict(spec, "updateStrategy")
    if not strategy.get("type"):
        strategy["type"] = "RollingUpdate"
        nested_dict(strategy, "rollingUpdate")
    rolling = strategy.get("rollingUpdate")
    if strategy["type"] == "RollingUpdate" and isinstance(rolling, dict):
        _default_none(rolling, "partition", 0)
    retention = nested_dict(spec, "persistentVolumeClaimRetentionPolicy")
    _default(retention, "whenDeleted", "Retain")
    _default(retention, "whenScaled", "Retain")
    if spec.get("replicas") is None:
        spec["replicas"] = 1
    if spec.get("revisionHistoryLimit") is None:
        spec["revisionHistoryLimit"] = 10
    pod_template(nested_dict(spec, "template"))
    for claim in _dicts(spec.get("volumeClaimTemplates")):
        # The v1 conversion names the embedded claims' type; their defaults are a PVC's.
        claim.setdefault("apiVersion", "v1")
        claim.setdefault("kind", "PersistentVolumeClaim")
        _persistent_volume_claim(claim)


def _daemon_set(obj: Obj) -> None:
    spec = nested_dict(obj, "spec")
    strategy = nested_dict(spec, "updateStrategy")
    _default(strategy, "type", "RollingUpdate")
    if strategy["type"] == "RollingUpdate":
        rolling = nested_dict(strategy, "rollingUpdate")
        if rolling.get("maxUnavailable") is None:
            rolling["maxUnavailable"] = 1
        if rolling.get("maxSurge") is None:
            rolling["maxSurge"] = 0
    if spec.get("revisionHistoryLimit") is None:
        spec["revisionHistoryLimit"] = 10
    pod_template(nested_dict(spec, "template"))


def _cron_job(obj: Obj) -> None:
    spec = nested_dict(obj, "spec")
    _default(spec, "concurrencyPolicy", "Allow")
    if spec.get("suspend") is None:
        spec["suspend"] = False
    if spec.get("successfulJobsHistoryLimit") is None:
        spec["successfulJobsHistoryLimit"] = 3
    if spec.get("failedJobsHistoryLimit") is None:
        spec["failedJobsHistoryLimit"] = 1
    pod_template(nested_dict(nested_dict(nested_dict(spec, "jobTemplate"), "spec"), "template"))


def _persistent_volume_claim(obj: Obj) -> None:
    spec = nested_dict(obj, "spec")
    _default(spec, "volumeMode", "Filesystem")
    _default(nested_dict(obj, "status"), "phase", "Pending")


_HPA_SCALE_UP: Obj = {
    "stabilizationWindowSeconds": 0,
    "selectPolicy": "Max",
    "policies": [
        {"type": "Pods", "value": 4, "periodSeconds": 15},
        {"type": "Percent", "value": 100, "periodSeconds": 15},
    ],
}
_HPA_SCALE_DOWN: Obj = {
    "stabilizationWindowSeconds": 300,
    "selectPolicy": "Max",
    "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}],
}


def _scaling_rules(rules: Any, default: Obj) -> Obj:
    """GenerateHPAScale{Up,Down}Rules: the default rules with what `rules` sets."""
    merged = {k: (list(v) if isinstance(v, list) else v) for k, v in default.items()}
    merged["policies"] = [dict(p) for p in default["policies"]]
    if isinstance(rules, dict):
        for key in ("selectPolicy", "stabilizationWindowSeconds", "policies", "tolerance"):
            if rules.get(key) is not None:
                merged[key] = rules[key]
    return merged


def _horizontal_pod_autoscaler(obj: Obj) -> None:
    spec = nested_dict(obj, "spec")
    if spec.get("minReplicas") is None:
        spec["minReplicas"] = 1
    if not spec.get("metrics"):
        target = {"type": "Utilization", "averageUtilization": 80}
        spec["metrics"] = [{"type": "Resource", "resource": {"name": "cpu", "target": target}}]
    behavior = spec.get("behavior")
    if isinstance(behavior, dict):
        behavior["scaleUp"] = _scaling_rules(behavior.get("scaleUp"), _HPA_SCALE_UP)
        behavior["scaleDown"] = _scaling_rules(behavior.get("scaleDown"), _HPA_SCALE_DOWN)


def _network_policy(obj: Obj) -> None:
    spec = nested_dict(obj, "spec")
    nested_dict(spec, "podSelector")
    for direction in ("ingress", "egress"):
        for rule in _dicts(spec.get(direction)):
            for port in _dicts(rule.get("ports")):
                _default(port, "protocol", "TCP")
    if not spec.get("policyTypes"):
        spec["policyTypes"] = ["Ingress", "Egress"] if spec.get("egress") else ["Ingress"]


def _ingress_class(obj: Obj) -> None:
    parameters = nested_dict(obj, "spec").get("parameters")
    if isinstance(parameters, dict):
        _default(parameters, "scope", "Cluster")


def _endpoint_slice(obj: Obj) -> None:
    for port in _dicts(obj.get("ports")):
        if port.get("name") is None:
            port["name"] = ""
        _default(port, "protocol", "TCP")


def _priority_class(obj: Obj) -> None:
    _default(obj, "preemptionPolicy", "PreemptLowerPriority")


_DEFAULTERS: dict[tuple[str, str], Callable[[Obj], None]] = {
    ("", "LimitRange"): _limit_range,
    ("", "Pod"): _pod,
    ("", "ReplicationController"): _replication_controller,
    ("", "Service"): _service,
    ("", "Secret"): _secret,
    ("", "Namespace"): _namespace,
    ("", "Endpoints"): _endpoints,
    ("apps", "Deployment"): _deployment,
    ("apps", "ReplicaSet"): _replica_set,
    ("batch", "Job"): _job,
    ("apps", "StatefulSet"): _stateful_set,
    ("apps", "DaemonSet"): _daemon_set,
    ("batch", "CronJob"): _cron_job,
    ("", "PersistentVolumeClaim"): _persistent_volume_claim,
    ("autoscaling", "HorizontalPodAutoscaler"): _horizontal_pod_autoscaler,
    ("networking.k8s.io", "NetworkPolicy"): _network_policy,
    ("networking.k8s.io", "IngressClass"): _ingress_class,
    ("discovery.k8s.io", "EndpointSlice"): _endpoint_slice,
    ("scheduling.k8s.io", "PriorityClass"): _priority_class,
    ("rbac.authorization.k8s.io", "RoleBinding"): _binding,
    ("rbac.authorization.k8s.io", "ClusterRoleBinding"): _binding,
    ("apiextensions.k8s.io", "CustomResourceDefinition"): _crd,
}


def apply_defaults(rt: ResourceType, obj: Obj) -> None:
    """Fill in upstream's defaults for rt's kind, in place; fields already set are kept."""
    if rt.custom is not None:
        custom_resources.apply_defaults(rt, obj)
        return
    defaulter = _DEFAULTERS.get((rt.group, rt.kind))
    if defaulter is not None:
        defaulter(obj)
        return
    kcp_kind = kcp_kinds.kind_of(rt.group, rt.kind)
    if kcp_kind is not None:
        custom_resources.apply_structural_defaults(kcp_kind.defaulting, obj)
