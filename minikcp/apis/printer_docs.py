"""Upstream API field documentation that Table column descriptions quote.

The server puts these strings in `columnDefinitions[].description`, exactly as kube-apiserver 1.32
does (`<Type>{}.SwaggerDoc()[field]` in pkg/printers/internalversion/printers.go). Keys are
`<group>_<version>.<Type>.<field>`; the text is the k8s.io/api (and apimachinery) v0.32 doc string.
"""

from __future__ import annotations

from typing import Final

FIELD_DOCS: Final[dict[str, str]] = {
    "meta_v1.ObjectMeta.name": (
        "Name must be unique within a namespace. Is required when creating resources, "
        "although some resources may allow a client to request the generation of an "
        "appropriate name automatically. Name is primarily intended for creation idempotence "
        "and configuration definition. Cannot be updated. More info: "
        "https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names"
    ),
    "meta_v1.ObjectMeta.creationTimestamp": (
        "CreationTimestamp is a timestamp representing the server time when this object was "
        "created. It is not guaranteed to be set in happens-before order across separate "
        "operations. Clients may not set this value. It is represented in RFC3339 form and is "
        "in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: "
        "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata"
    ),
    "core_v1.ReplicationControllerSpec.replicas": (
        "Replicas is the number of desired replicas. This is a pointer to distinguish between "
        "explicit zero and unspecified. Defaults to 1. More info: "
        "https://kubernetes.io/docs/concepts/workloads/controllers/replicationcontroller"
        "#what-is-a-replicationcontroller"
    ),
    "core_v1.ReplicationControllerStatus.replicas": (
        "Replicas is the most recently observed number of replicas. More info: "
        "https://kubernetes.io/docs/concepts/workloads/controllers/replicationcontroller"
        "#what-is-a-replicationcontroller"
    ),
    "core_v1.ReplicationControllerStatus.readyReplicas": (
        "The number of ready replicas for this replication controller."
    ),
    "core_v1.ReplicationControllerSpec.selector": (
        "Selector is a label query over pods that should match the Replicas count. If Selector "
        "is empty, it is defaulted to the labels present on the Pod template. Label keys and "
        "values that must match in order to be controlled by this replication controller, if "
        "empty defaulted to labels on Pod template. More info: "
        "https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors"
    ),
    "core_v1.PodStatus.podIP": (
        "podIP address allocated to the pod. Routable at least within the cluster. Empty if "
        "not yet allocated."
    ),
    "core_v1.NodeSystemInfo.kubeletVersion": "Kubelet Version reported by the node.",
    "core_v1.NodeSystemInfo.osImage": (
        "OS Image reported by the node from /etc/os-release (e.g. Debian GNU/Linux 7 (wheezy))."
    ),
    "core_v1.NodeSystemInfo.kernelVersion": (
        "Kernel Version reported by the node from 'uname -r' (e.g. 3.16.0-0.bpo.4-amd64)."
    ),
    "core_v1.NodeSystemInfo.containerRuntimeVersion": (
        "ContainerRuntime Version reported by the node through runtime remote API (e.g. "
        "containerd://1.4.2)."
    ),
    "core_v1.PodSpec.nodeName": (
        "NodeName indicates in which node this pod is scheduled. If empty, this pod is a "
        "candidate for scheduling by the scheduler defined in schedulerName. Once this field "
        "is set, the kubelet for this node becomes responsible for the lifecycle of this pod. "
        "This field should not be used to express a desire for the pod to be scheduled on a "
        "specific node. "
        "https://kubernetes.io/docs/concepts/scheduling-eviction/assign-pod-node/#nodename"
    ),
    "core_v1.PodStatus.nominatedNodeName": (
        "nominatedNodeName is set only when this pod preempts other pods on the node, but it "
        "cannot be scheduled right away as preemption victims receive their graceful "
        "termination periods. This field does not guarantee that the pod will be scheduled on "
        "this node. Scheduler may decide to place the pod elsewhere if other nodes become "
        "available sooner. Scheduler may also decide to give the resources on this node to a "
        "higher priority pod that is created after preemption. As a result, this field may be "
        "different than PodSpec.nodeName when the pod is scheduled."
    ),
    "core_v1.PodSpec.readinessGates": (
        "If specified, all readiness gates will be evaluated for pod readiness. A pod is "
        "ready when all its containers are ready AND all conditions specified in the "
        'readiness gates have status equal to "True" More info: '
        "https://git.k8s.io/enhancements/keps/sig-network/580-pod-readiness-gates"
    ),
    "core_v1.ServiceSpec.type": (
        "type determines how the Service is exposed. Defaults to ClusterIP. Valid options are "
        'ExternalName, ClusterIP, NodePort, and LoadBalancer. "ClusterIP" allocates a '
        "cluster-internal IP address for load-balancing to endpoints. Endpoints are "
        "determined by the selector or if that is not specified, by manual construction of an "
        'Endpoints object or EndpointSlice objects. If clusterIP is "None", no virtual IP '
        "is allocated and the endpoints are published as a set of endpoints rather than a "
        'virtual IP. "NodePort" builds on ClusterIP and allocates a port on every node '
        'which routes to the same endpoints as the clusterIP. "LoadBalancer" builds on '
        "NodePort and creates an external load-balancer (if supported in the current cloud) "
        'which routes to the same endpoints as the clusterIP. "ExternalName" aliases this '
        "service to the specified externalName. Several other fields do not apply to "
        "ExternalName services. More info: "
        "https://kubernetes.io/docs/concepts/services-networking/service/#publishing-services-service-types"
    ),
    "core_v1.ServiceSpec.clusterIP": (
        "clusterIP is the IP address of the service and is usually assigned randomly. If an "
        "address is specified manually, is in-range (as per system configuration), and is not "
        "in use, it will be allocated to the service; otherwise creation of the service will "
        "fail. This field may not be changed through updates unless the type field is also "
        "being changed to ExternalName (which requires this field to be blank) or the type "
        "field is being changed from ExternalName (in which case this field may optionally be "
        'specified, as describe above).  Valid values are "None", empty string (""), or a '
        'valid IP address. Setting this to "None" makes a "headless service" (no virtual '
        "IP), which is useful when direct endpoint connections are preferred and proxying is "
        "not required.  Only applies to types ClusterIP, NodePort, and LoadBalancer. If this "
        "field is specified when creating a Service of type ExternalName, creation will fail. "
        "This field will be wiped when updating a Service to type ExternalName. More info: "
        "https://kubernetes.io/docs/concepts/services-networking/service/#virtual-ips-and-service-proxies"
    ),
    "core_v1.ServiceSpec.externalIPs": (
        "externalIPs is a list of IP addresses for which nodes in the cluster will also "
        "accept traffic for this service.  These IPs are not managed by Kubernetes.  The user "
        "is responsible for ensuring that traffic arrives at a node with this IP.  A common "
        "example is external load-balancers that are not part of the Kubernetes system."
    ),
    "core_v1.ServiceSpec.ports": (
        "The list of ports that are exposed by this service. More info: "
        "https://kubernetes.io/docs/concepts/services-networking/service/#virtual-ips-and-service-proxies"
    ),
    "core_v1.ServiceSpec.selector": (
        "Route service traffic to pods with label keys and values matching this selector. If "
        "empty or not present, the service is assumed to have an external process managing "
        "its endpoints, which Kubernetes will not modify. Only applies to types ClusterIP, "
        "NodePort, and LoadBalancer. Ignored if type is ExternalName. More info: "
        "https://kubernetes.io/docs/concepts/services-networking/service/"
    ),
    "core_v1.Endpoints.subsets": (
        "The set of all endpoints is the union of all subsets. Addresses are placed into "
        "subsets according to the IPs they share. A single address with multiple ports, some "
        "of which are ready and some of which are not (because they come from different "
        "containers) will result in the address being displayed in different subsets for the "
        "different ports. No address will appear in both Addresses and NotReadyAddresses in "
        "the same subset. Sets of addresses and ports that comprise a service."
    ),
    "core_v1.Event.lastTimestamp": (
        "The time at which the most recent occurrence of this event was recorded."
    ),
    "core_v1.Event.type": (
        "Type of this event (Normal, Warning), new types could be added in the future"
    ),
    "core_v1.Event.reason": (
        "This should be a short, machine understandable string that gives the reason for the "
        "transition into the object's current status."
    ),
    "core_v1.Event.involvedObject": "The object that this event is about.",
    "core_v1.ObjectReference.fieldPath": (
        "If referring to a piece of an object instead of an entire object, this string should "
        "contain a valid JSON/Go field access statement, such as "
        "desiredState.manifest.containers[2]. For example, if the object reference is to a "
        'container within a pod, this would take on a value like: "spec.containers{name}" '
        '(where "name" refers to the name of the container that triggered the event) or if '
        'no container name is specified "spec.containers[2]" (container with index 2 in '
        "this pod). This syntax is chosen only to have some well-defined way of referencing a "
        "part of an object."
    ),
    "core_v1.Event.source": (
        "The component reporting this event. Should be a short machine understandable string."
    ),
    "core_v1.Event.message": "A human-readable description of the status of this operation.",
    "core_v1.Event.firstTimestamp": (
        "The time at which the event was first recorded. (Time of server receipt is in TypeMeta.)"
    ),
    "core_v1.Event.count": "The number of times this event has occurred.",
    "core_v1.Secret.type": (
        "Used to facilitate programmatic handling of secret data. More info: "
        "https://kubernetes.io/docs/concepts/configuration/secret/#secret-types"
    ),
    "core_v1.Secret.data": (
        "Data contains the secret data. Each key must consist of alphanumeric characters, "
        "'-', '_' or '.'. The serialized form of the secret data is a base64 encoded string, "
        "representing the arbitrary (possibly non-string) data value here. Described in "
        "https://tools.ietf.org/html/rfc4648#section-4"
    ),
    "core_v1.ServiceAccount.secrets": (
        "Secrets is a list of the secrets in the same namespace that pods running using this "
        "ServiceAccount are allowed to use. Pods are only limited to this list if this "
        'service account has a "kubernetes.io/enforce-mountable-secrets" annotation set to '
        '"true". The "kubernetes.io/enforce-mountable-secrets" annotation is deprecated '
        "since v1.32. Prefer separate namespaces to isolate access to mounted secrets. This "
        "field should not be used to find auto-generated service account token secrets for "
        "use outside of pods. Instead, tokens can be requested directly using the "
        "TokenRequest API, or service account token secrets can be manually created. More "
        "info: https://kubernetes.io/docs/concepts/configuration/secret"
    ),
    "core_v1.ConfigMap.data": (
        "Data contains the configuration data. Each key must consist of alphanumeric "
        "characters, '-', '_' or '.'. Values with non-UTF-8 byte sequences must use the "
        "BinaryData field. The keys stored in Data must not overlap with the keys in the "
        "BinaryData field, this is enforced during validation process."
    ),
    "extensions_v1beta1.ReplicaSetSpec.replicas": (
        "Replicas is the number of desired replicas. This is a pointer to distinguish between "
        "explicit zero and unspecified. Defaults to 1. More info: "
        "https://kubernetes.io/docs/concepts/workloads/controllers/replicationcontroller/#what-is-a-replicationcontroller"
    ),
    "extensions_v1beta1.ReplicaSetStatus.replicas": (
        "Replicas is the most recently observed number of replicas. More info: "
        "https://kubernetes.io/docs/concepts/workloads/controllers/replicationcontroller/#what-is-a-replicationcontroller"
    ),
    "extensions_v1beta1.ReplicaSetStatus.readyReplicas": (
        "The number of ready replicas for this replica set."
    ),
    "extensions_v1beta1.ReplicaSetSpec.selector": (
        "Selector is a label query over pods that should match the replica count. If the "
        "selector is empty, it is defaulted to the labels present on the pod template. Label "
        "keys and values that must match in order to be controlled by this replica set. More "
        "info: "
        "https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors"
    ),
    "extensions_v1beta1.DeploymentStatus.updatedReplicas": (
        "Total number of non-terminated pods targeted by this deployment that have the "
        "desired template spec."
    ),
    "extensions_v1beta1.DeploymentStatus.availableReplicas": (
        "Total number of available pods (ready for at least minReadySeconds) targeted by this "
        "deployment."
    ),
    "extensions_v1beta1.DeploymentSpec.selector": (
        "Label selector for pods. Existing ReplicaSets whose pods are selected by this will "
        "be the ones affected by this deployment."
    ),
    "batch_v1.JobStatus.succeeded": (
        "The number of pods which reached phase Succeeded. The value increases monotonically "
        "for a given spec. However, it may decrease in reaction to scale down of elastic "
        "indexed jobs."
    ),
    "batch_v1.JobSpec.selector": (
        "A label query over pods that should match the pod count. Normally, the system sets "
        "this field for you. More info: "
        "https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors"
    ),
    "rbac_v1beta1.RoleBinding.roleRef": (
        "RoleRef can reference a Role in the current namespace or a ClusterRole in the global "
        "namespace. If the RoleRef cannot be resolved, the Authorizer must return an error."
    ),
    "rbac_v1beta1.ClusterRoleBinding.roleRef": (
        "RoleRef can only reference a ClusterRole in the global namespace. If the RoleRef "
        "cannot be resolved, the Authorizer must return an error."
    ),
    "coordination_v1.LeaseSpec.holderIdentity": (
        "holderIdentity contains the identity of the holder of a current lease. If "
        "Coordinated Leader Election is used, the holder identity must be equal to the "
        "elected LeaseCandidate.metadata.name field."
    ),
}
