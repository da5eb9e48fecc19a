"""Protobuf message descriptors for the built-in kinds that clients send as protobuf.

Each message is written as the Go struct it comes from, one field a line, in declaration order
(which is also the JSON key order): ``<number> <jsonName>[!] <type>``.

- ``number`` is the protobuf field number (k8s.io/api and k8s.io/apimachinery ``generated.proto``,
  release 1.33); ``jsonName`` is the Go ``json`` tag name, ``...`` for an embedded struct whose
  fields the JSON flattens into the parent (``json:",inline"``), and a trailing ``!`` when the tag
  has no ``omitempty``, so Go prints the zero value too.
- ``type`` is the Go type with named string types spelled ``string``: a scalar (``string``,
  ``bytes`` for ``[]byte``, ``int32``, ``int64``, ``bool``), a special type with its own JSON form
  (``Time``, ``MicroTime``, ``Duration``, ``Quantity``, ``IntOrString``, ``FieldsV1``,
  ``ExtraValue``) or a message name below, optionally as ``*T``, ``[]T`` or ``map[string]T``.

The Go shape matters because the server must see what ``encoding/json`` would print for the decoded
Go object: value structs are always printed, nil pointers and empty slices/maps are omitted (or
``null`` without ``omitempty``), zero scalars are omitted under ``omitempty``.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass

from minikcp.machinery import protobuf_cluster_messages, protobuf_pod_messages

SCALARS = frozenset({"string", "bytes", "int32", "int64", "bool"})
SPECIALS = frozenset(
    {"Time", "MicroTime", "Duration", "Quantity", "IntOrString", "FieldsV1", "ExtraValue"}
)


class Shape(enum.Enum):
    VALUE = "value"  # Go value: zero value when absent from the wire
    POINTER = "pointer"  # Go pointer: nil when absent
    SLICE = "slice"  # repeated field
    MAP = "map"  # repeated entry messages {1: key, 2: value}; keys are strings


@dataclass(frozen=True, slots=True)
class Field:
    number: int
    json_name: str  # "" for an embedded struct
    shape: Shape
    element: str  # scalar, special or message name; the value type for maps
    omitempty: bool


@dataclass(frozen=True, slots=True)
class Message:
    name: str
    fields: tuple[Field, ...]
    by_number: dict[int, Field]


# The top-level kinds decodable from protobuf: (apiVersion, kind) -> message name.
KIND_MESSAGES: dict[tuple[str, str], str] = {
    ("v1", "Namespace"): "Namespace",
    ("v1", "ConfigMap"): "ConfigMap",
    ("v1", "Secret"): "Secret",
    ("v1", "ServiceAccount"): "ServiceAccount",
    ("v1", "Service"): "Service",
    ("v1", "ResourceQuota"): "ResourceQuota",
    ("v1", "Pod"): "Pod",
    ("apps/v1", "Deployment"): "Deployment",
    ("batch/v1", "Job"): "Job",
    ("batch/v1", "CronJob"): "CronJob",
    ("rbac.authorization.k8s.io/v1", "Role"): "Role",
    ("rbac.authorization.k8s.io/v1", "ClusterRole"): "ClusterRole",
    ("rbac.authorization.k8s.io/v1", "RoleBinding"): "RoleBinding",
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"): "ClusterRoleBinding",
    ("authorization.k8s.io/v1", "SelfSubjectAccessReview"): "SelfSubjectAccessReview",
    ("authorization.k8s.io/v1", "SelfSubjectRulesReview"): "SelfSubjectRulesReview",
    ("authentication.k8s.io/v1", "SelfSubjectReview"): "SelfSubjectReview",
    ("authentication.k8s.io/v1", "TokenRequest"): "TokenRequest",
    ("scheduling.k8s.io/v1", "PriorityClass"): "PriorityClass",
    ("policy/v1", "PodDisruptionBudget"): "PodDisruptionBudget",
    ("policy/v1", "Eviction"): "Eviction",
    ("networking.k8s.io/v1", "Ingress"): "Ingress",
    **protobuf_cluster_messages.CLUSTER_KINDS,
}

# DeleteOptions is registered in every group version, and upstream's delete handler accepts it
# from any of them (kubectl drain sends it as v1).
_ANY_VERSION_KINDS = {"DeleteOptions": "DeleteOptions"}


def kind_message(api_version: str, kind: str) -> str | None:
    """The message name for a top-level kind, or None when it cannot be decoded."""
    return KIND_MESSAGES.get((api_version, kind)) or _ANY_VERSION_KINDS.get(kind)


# k8s.io/apimachinery/pkg/apis/meta/v1
_META: dict[str, str] = {
    "ObjectMeta": """
        1 name string
        2 generateName string
        3 namespace string
        4 selfLink string
        5 uid string
        6 resourceVersion string
        7 generation int64
        8 creationTimestamp Time
        9 deletionTimestamp *Time
        10 deletionGracePeriodSeconds *int64
        11 labels map[string]string
        12 annotations map[string]string
        13 ownerReferences []OwnerReference
        14 finalizers []string
        17 managedFields []ManagedFieldsEntry
    """,
    "OwnerReference": """
        5 apiVersion! string
        1 kind! string
        3 name! string
        4 uid! string
        6 controller *bool
        7 blockOwnerDeletion *bool
    """,
    "ManagedFieldsEntry": """
        1 manager string
        2 operation string
        3 apiVersion string
        4 time *Time
        6 fieldsType string
        7 fieldsV1 *FieldsV1
        8 subresource string
    """,
    "LabelSelector": """
        1 matchLabels map[string]string
        2 matchExpressions []LabelSelectorRequirement
    """,
    "LabelSelectorRequirement": "1 key! string; 2 operator! string; 3 values []string",
    "FieldSelectorRequirement": "1 key! string; 2 operator! string; 3 values []string",
    "Condition": """
        1 type! string
        2 status! string
        3 observedGeneration int64
        4 lastTransitionTime! Time
        5 reason! string
        6 message! string
    """,
    "DeleteOptions": """
        1 gracePeriodSeconds *int64
        2 preconditions *Preconditions
        3 orphanDependents *bool
        4 propagationPolicy *string
        5 dryRun []string
        6 ignoreStoreReadErrorWithClusterBreakingPotential *bool
    """,
    "Preconditions": "1 uid *string; 2 resourceVersion *string",
}

# k8s.io/api/core/v1, except the pod types (protobuf_pod_messages) and events and endpoints
# (protobuf_cluster_messages)
_CORE: dict[str, str] = {
    "Namespace": "1 metadata ObjectMeta; 2 spec NamespaceSpec; 3 status NamespaceStatus",
    "NamespaceSpec": "1 finalizers []string",
    "NamespaceStatus": "1 phase string; 2 conditions []NamespaceCondition",
    "NamespaceCondition": """
        1 type! string
        2 status! string
        4 lastTransitionTime Time
        5 reason string
        6 message string
    """,
    "ConfigMap": """
        1 metadata ObjectMeta
        4 immutable *bool
        2 data map[string]string
        3 binaryData map[string]bytes
    """,
    "Secret": """
        1 metadata ObjectMeta
        5 immutable *bool
        2 data map[string]bytes
        4 stringData map[string]string
        3 type string
    """,
    "ServiceAccount": """
        1 metadata ObjectMeta
        2 secrets []ObjectReference
        3 imagePullSecrets []LocalObjectReference
        4 automountServiceAccountToken *bool
    """,
    "ObjectReference": """
        1 kind string
        2 namespace string
        3 name string
        4 uid string
        5 apiVersion string
        6 resourceVersion string
        7 fieldPath string
    """,
    "LocalObjectReference": "1 name string",
    "TypedLocalObjectReference": "1 apiGroup! *string; 2 kind! string; 3 name! string",
    "Service": "1 metadata ObjectMeta; 2 spec ServiceSpec; 3 status ServiceStatus",
    "ServiceSpec": """
        1 ports []ServicePort
        2 selector map[string]string
        3 clusterIP string
        18 clusterIPs []string
        4 type string
        5 externalIPs []string
        7 sessionAffinity string
        8 loadBalancerIP string
        9 loadBalancerSourceRanges []string
        10 externalName string
        11 externalTrafficPolicy string
        12 healthCheckNodePort int32
        13 publishNotReadyAddresses bool
        14 sessionAffinityConfig *SessionAffinityConfig
        19 ipFamilies []string
        17 ipFamilyPolicy *string
        20 allocateLoadBalancerNodePorts *bool
        21 loadBalancerClass *string
        22 internalTrafficPolicy *string
        23 trafficDistribution *string
    """,
    "ServicePort": """
        1 name string
        2 protocol string
        6 appProtocol *string
        3 port! int32
        4 targetPort IntOrString
        5 nodePort int32
    """,
    "SessionAffinityConfig": "1 clientIP *ClientIPConfig",
    "ClientIPConfig": "1 timeoutSeconds *int32",
    "ServiceStatus": "1 loadBalancer LoadBalancerStatus; 2 conditions []Condition",
    "LoadBalancerStatus": "1 ingress []LoadBalancerIngress",
    "LoadBalancerIngress": """
        1 ip string
        2 hostname string
        3 ipMode *string
        4 ports []PortStatus
    """,
    "PortStatus": "1 port! int32; 2 protocol! string; 3 error *string",
    "ResourceQuota": """
        1 metadata ObjectMeta
        2 spec ResourceQuotaSpec
        3 status ResourceQuotaStatus
    """,
    "ResourceQuotaSpec": """
        1 hard map[string]Quantity
        2 scopes []string
        3 scopeSelector *ScopeSelector
    """,
    "ScopeSelector": "1 matchExpressions []ScopedResourceSelectorRequirement",
    "ScopedResourceSelectorRequirement": """
        1 scopeName! string
        2 operator! string
        3 values []string
    """,
    "ResourceQuotaStatus": "1 hard map[string]Quantity; 2 used map[string]Quantity",
}

# apps/v1, batch/v1, policy/v1, scheduling.k8s.io/v1, networking.k8s.io/v1
_WORKLOADS: dict[str, str] = {
    "Deployment": "1 metadata ObjectMeta; 2 spec DeploymentSpec; 3 status DeploymentStatus",
    "DeploymentSpec": """
        1 replicas *int32
        2 selector! *LabelSelector
        3 template! PodTemplateSpec
        4 strategy DeploymentStrategy
        5 minReadySeconds int32
        6 revisionHistoryLimit *int32
        7 paused bool
        9 progressDeadlineSeconds *int32
    """,
    "DeploymentStrategy": "1 type string; 2 rollingUpdate *RollingUpdateDeployment",
    "RollingUpdateDeployment": "1 maxUnavailable *IntOrString; 2 maxSurge *IntOrString",
    "DeploymentStatus": """
        1 observedGeneration int64
        2 replicas int32
        3 updatedReplicas int32
        7 readyReplicas int32
        4 availableReplicas int32
        5 unavailableReplicas int32
        9 terminatingReplicas *int32
        6 conditions []DeploymentCondition
        8 collisionCount *int32
    """,
    "DeploymentCondition": """
        1 type! string
        2 status! string
        6 lastUpdateTime Time
        7 lastTransitionTime Time
        4 reason string
        5 message string
    """,
    "Job": "1 metadata ObjectMeta; 2 spec JobSpec; 3 status JobStatus",
    "JobSpec": """
        1 parallelism *int32
        2 completions *int32
        3 activeDeadlineSeconds *int64
        11 podFailurePolicy *PodFailurePolicy
        16 successPolicy *SuccessPolicy
        7 backoffLimit *int32
        12 backoffLimitPerIndex *int32
        13 maxFailedIndexes *int32
        4 selector *LabelSelector
        5 manualSelector *bool
        6 template! PodTemplateSpec
        8 ttlSecondsAfterFinished *int32
        9 completionMode *string
        10 suspend *bool
        14 podReplacementPolicy *string
        15 managedBy *string
    """,
    "PodFailurePolicy": "1 rules! []PodFailurePolicyRule",
    "PodFailurePolicyRule": """
        1 action! string
        2 onExitCodes *PodFailurePolicyOnExitCodesRequirement
        3 onPodConditions []PodFailurePolicyOnPodConditionsPattern
    """,
    "PodFailurePolicyOnExitCodesRequirement": """
        1 containerName *string
        2 operator! string
        3 values! []int32
    """,
    "PodFailurePolicyOnPodConditionsPattern": "1 type! string; 2 status! string",
    "SuccessPolicy": "1 rules! []SuccessPolicyRule",
    "SuccessPolicyRule": "1 succeededIndexes *string; 2 succeededCount *int32",
    "JobStatus": """
        1 conditions []JobCondition
        2 startTime *Time
        3 completionTime *Time
        4 active int32
        5 succeeded int32
        6 failed int32
        11 terminating *int32
        7 completedIndexes string
        10 failedIndexes *string
        8 uncountedTerminatedPods *UncountedTerminatedPods
        9 ready *int32
    """,
    "JobCondition": """
        1 type! string
        2 status! string
        3 lastProbeTime Time
        4 lastTransitionTime Time
        5 reason string
        6 message string
    """,
    "UncountedTerminatedPods": "1 succeeded []string; 2 failed []string",
    "CronJob": "1 metadata ObjectMeta; 2 spec CronJobSpec; 3 status CronJobStatus",
    "CronJobSpec": """
        1 schedule! string
        8 timeZone *string
        2 startingDeadlineSeconds *int64
        3 concurrencyPolicy string
        4 suspend *bool
        5 jobTemplate! JobTemplateSpec
        6 successfulJobsHistoryLimit *int32
        7 failedJobsHistoryLimit *int32
    """,
    "JobTemplateSpec": "1 metadata ObjectMeta; 2 spec JobSpec",
    "CronJobStatus": """
        1 active []ObjectReference
        4 lastScheduleTime *Time
        5 lastSuccessfulTime *Time
    """,
    "PodDisruptionBudget": """
        1 metadata ObjectMeta
        2 spec PodDisruptionBudgetSpec
        3 status PodDisruptionBudgetStatus
    """,
    "PodDisruptionBudgetSpec": """
        1 minAvailable *IntOrString
        2 selector *LabelSelector
        3 maxUnavailable *IntOrString
        4 unhealthyPodEvictionPolicy *string
    """,
    "PodDisruptionBudgetStatus": """
        1 observedGeneration int64
        2 disruptedPods map[string]Time
        3 disruptionsAllowed! int32
        4 currentHealthy! int32
        5 desiredHealthy! int32
        6 expectedPods! int32
        7 conditions []Condition
    """,
    "Eviction": "1 metadata ObjectMeta; 2 deleteOptions *DeleteOptions",
    "PriorityClass": """
        1 metadata ObjectMeta
        2 value! int32
        3 globalDefault bool
        4 description string
        5 preemptionPolicy *string
    """,
    "Ingress": "1 metadata ObjectMeta; 2 spec IngressSpec; 3 status IngressStatus",
    "IngressSpec": """
        4 ingressClassName *string
        1 defaultBackend *IngressBackend
        2 tls []IngressTLS
        3 rules []IngressRule
    """,
    "IngressBackend": "4 service *IngressServiceBackend; 3 resource *TypedLocalObjectReference",
    "IngressServiceBackend": "1 name! string; 2 port ServiceBackendPort",
    "ServiceBackendPort": "1 name string; 2 number int32",
    "IngressTLS": "1 hosts []string; 2 secretName string",
    "IngressRule": "1 host string; 2 ... IngressRuleValue",
    "IngressRuleValue": "1 http *HTTPIngressRuleValue",
    "HTTPIngressRuleValue": "1 paths! []HTTPIngressPath",
    "HTTPIngressPath": "1 path string; 3 pathType! *string; 2 backend! IngressBackend",
    "IngressStatus": "1 loadBalancer IngressLoadBalancerStatus",
    "IngressLoadBalancerStatus": "1 ingress []IngressLoadBalancerIngress",
    "IngressLoadBalancerIngress": "1 ip string; 2 hostname string; 4 ports []IngressPortStatus",
    "IngressPortStatus": "1 port! int32; 2 protocol! string; 3 error *string",
}

# rbac.authorization.k8s.io/v1, authorization.k8s.io/v1, authentication.k8s.io/v1
_ACCESS: dict[str, str] = {
    "Role": "1 metadata ObjectMeta; 2 rules! []PolicyRule",
    "ClusterRole": """
        1 metadata ObjectMeta
        2 rules! []PolicyRule
        3 aggregationRule *AggregationRule
    """,
    "PolicyRule": """
        1 verbs! []string
        2 apiGroups []string
        3 resources []string
        4 resourceNames []string
        5 nonResourceURLs []string
    """,
    "AggregationRule": "1 clusterRoleSelectors []LabelSelector",
    "RoleBinding": "1 metadata ObjectMeta; 2 subjects []Subject; 3 roleRef! RoleRef",
    "ClusterRoleBinding": "1 metadata ObjectMeta; 2 subjects []Subject; 3 roleRef! RoleRef",
    "Subject": "1 kind! string; 2 apiGroup string; 3 name! string; 4 namespace string",
    "RoleRef": "1 apiGroup! string; 2 kind! string; 3 name! string",
    "SelfSubjectAccessReview": """
        1 metadata ObjectMeta
        2 spec! SelfSubjectAccessReviewSpec
        3 status SubjectAccessReviewStatus
    """,
    "SelfSubjectAccessReviewSpec": """
        1 resourceAttributes *ResourceAttributes
        2 nonResourceAttributes *NonResourceAttributes
    """,
    "ResourceAttributes": """
        1 namespace string
        2 verb string
        3 group string
        4 version string
        5 resource string
        6 subresource string
        7 name string
        8 fieldSelector *FieldSelectorAttributes
        9 labelSelector *LabelSelectorAttributes
    """,
    "FieldSelectorAttributes": "1 rawSelector string; 2 requirements []FieldSelectorRequirement",
    "LabelSelectorAttributes": "1 rawSelector string; 2 requirements []LabelSelectorRequirement",
    "NonResourceAttributes": "1 path string; 2 verb string",
    "SubjectAccessReviewStatus": """
        1 allowed! bool
        4 denied bool
        2 reason string
        3 evaluationError string
    """,
    "SelfSubjectRulesReview": """
        1 metadata ObjectMeta
        2 spec! SelfSubjectRulesReviewSpec
        3 status SubjectRulesReviewStatus
    """,
    "SelfSubjectRulesReviewSpec": "1 namespace string",
    "SubjectRulesReviewStatus": """
        1 resourceRules! []ResourceRule
        2 nonResourceRules! []NonResourceRule
        3 incomplete! bool
        4 evaluationError string
    """,
    "ResourceRule": """
        1 verbs! []string
        2 apiGroups []string
        3 resources []string
        4 resourceNames []string
    """,
    "NonResourceRule": "1 verbs! []string; 2 nonResourceURLs []string",
    "SelfSubjectReview": "1 metadata ObjectMeta; 2 status SelfSubjectReviewStatus",
    "SelfSubjectReviewStatus": "1 userInfo UserInfo",
    "UserInfo": """
        1 username string
        2 uid string
        3 groups []string
        4 extra map[string]ExtraValue
    """,
    "TokenRequest": "1 metadata ObjectMeta; 2 spec! TokenRequestSpec; 3 status TokenRequestStatus",
    "TokenRequestSpec": """
        1 audiences! []string
        4 expirationSeconds! *int64
        3 boundObjectRef! *BoundObjectReference
    """,
    "BoundObjectReference": "1 kind string; 2 apiVersion string; 3 name string; 4 uid string",
    "TokenRequestStatus": "1 token! string; 2 expirationTimestamp! Time",
}

_FIELD_LINE = re.compile(r"(\d+) ((?:\.\.\.)|\w+)(!?) ((?:\*|\[\]|map\[string\])?)(\w+)")
_SHAPES = {"": Shape.VALUE, "*": Shape.POINTER, "[]": Shape.SLICE, "map[string]": Shape.MAP}


def _parse_field(spec: str) -> Field:
    match = _FIELD_LINE.fullmatch(spec)
    if match is None:
        raise ValueError(f"bad field spec {spec!r}")
    number, name, bang, shape, element = match.groups()
    return Field(
        number=int(number),
        json_name="" if name == "..." else name,
        shape=_SHAPES[shape],
        element=element,
        omitempty=not bang,
    )


def _parse_message(name: str, text: str) -> Message:
    fields = tuple(_parse_field(line.strip()) for line in re.split(r"[;\n]", text) if line.strip())
    by_number = {f.number: f for f in fields}
    if len(by_number) != len(fields):
        raise ValueError(f"{name}: duplicate field number")
    return Message(name, fields, by_number)


def _build(*tables: dict[str, str]) -> dict[str, Message]:
    messages: dict[str, Message] = {}
    for table in tables:
        for name, text in table.items():
            if name in messages:
                raise ValueError(f"message {name} defined twice")
            messages[name] = _parse_message(name, text)
    known = SCALARS | SPECIALS | messages.keys()
    for message in messages.values():
        for f in message.fields:
            if f.element not in known:
                raise ValueError(f"{message.name}.{f.json_name}: unknown type {f.element}")
            if not f.json_name and (f.shape is not Shape.VALUE or f.element not in messages):
                raise ValueError(f"{message.name}: only value structs can be embedded")
    return messages


MESSAGES: dict[str, Message] = _build(
    _META,
    _CORE,
    _WORKLOADS,
    _ACCESS,
    protobuf_pod_messages.POD_MESSAGES,
    protobuf_cluster_messages.CLUSTER_MESSAGES,
)
