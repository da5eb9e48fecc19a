"""Protobuf message descriptors for the kinds cluster components write: events, leases, endpoints
and replica sets.

Same notation as minikcp.machinery.protobuf_messages (which parses these tables): one Go field a
line, ``<number> <jsonName>[!] <type>``, from k8s.io/api (release 1.33) core/v1, events/v1,
coordination/v1 and apps/v1. kubectl never sends these, but Go controllers built with client-go
1.32+ do. events.k8s.io/v1 reuses Go names core/v1 has too, so its messages carry an
``EventsV1`` prefix here.
"""

from __future__ import annotations

# k8s.io/api/core/v1
_CORE: dict[str, str] = {
    "Event": """
        1 metadata! ObjectMeta
        2 involvedObject! ObjectReference
        3 reason string
        4 message string
        5 source EventSource
        6 firstTimestamp Time
        7 lastTimestamp Time
        8 count int32
        9 type string
        10 eventTime MicroTime
        11 series *EventSeries
        12 action string
        13 related *ObjectReference
        14 reportingComponent! string
        15 reportingInstance! string
    """,
    "EventSource": "1 component string; 2 host string",
    "EventSeries": "1 count int32; 2 lastObservedTime MicroTime",
    "Endpoints": "1 metadata ObjectMeta; 2 subsets []EndpointSubset",
    "EndpointSubset": """
        1 addresses []EndpointAddress
        2 notReadyAddresses []EndpointAddress
        3 ports []EndpointPort
    """,
    "EndpointAddress": """
        1 ip! string
        3 hostname string
        4 nodeName *string
        2 targetRef *ObjectReference
    """,
    "EndpointPort": """
        1 name string
        2 port! int32
        3 protocol string
        4 appProtocol *string
    """,
}

# k8s.io/api/events/v1
_EVENTS: dict[str, str] = {
    "EventsV1Event": """
        1 metadata! ObjectMeta
        2 eventTime! MicroTime
        3 series *EventsV1EventSeries
        4 reportingController string
        5 reportingInstance string
        6 action string
        7 reason string
        8 regarding ObjectReference
        9 related *ObjectReference
        10 note string
        11 type string
        12 deprecatedSource EventSource
        13 deprecatedFirstTimestamp Time
        14 deprecatedLastTimestamp Time
        15 deprecatedCount int32
    """,
    "EventsV1EventSeries": "1 count! int32; 2 lastObservedTime! MicroTime",
}

# k8s.io/api/coordination/v1
_COORDINATION: dict[str, str] = {
    "Lease": "1 metadata ObjectMeta; 2 spec LeaseSpec",
    "LeaseSpec": """
        1 holderIdentity *string
        2 leaseDurationSeconds *int32
        3 acquireTime *MicroTime
        4 renewTime *MicroTime
        5 leaseTransitions *int32
        6 strategy *string
        7 preferredHolder *string
    """,
}

# k8s.io/api/apps/v1
_APPS: dict[str, str] = {
    "ReplicaSet": "1 metadata ObjectMeta; 2 spec ReplicaSetSpec; 3 status ReplicaSetStatus",
    "ReplicaSetSpec": """
        1 replicas *int32
        4 minReadySeconds int32
        2 selector! *LabelSelector
        3 template PodTemplateSpec
    """,
    "ReplicaSetStatus": """
        1 replicas! int32
        2 fullyLabeledReplicas int32
        4 readyReplicas int32
        5 availableReplicas int32
        7 terminatingReplicas *int32
        3 observedGeneration int64
        6 conditions []ReplicaSetCondition
    """,
    "ReplicaSetCondition": """
        1 type! string
        2 status! string
        3 lastTransitionTime Time
        4 reason string
        5 message string
    """,
}

CLUSTER_MESSAGES: dict[str, str] = {**_CORE, **_EVENTS, **_COORDINATION, **_APPS}

# (apiVersion, kind) -> message name for the top-level kinds above.
CLUSTER_KINDS: dict[tuple[str, str], str] = {
    ("v1", "Event"): "Event",
    ("v1", "Endpoints"): "Endpoints",
    ("events.k8s.io/v1", "Event"): "EventsV1Event",
    ("coordination.k8s.io/v1", "Lease"): "Lease",
    ("apps/v1", "ReplicaSet"): "ReplicaSet",
}
