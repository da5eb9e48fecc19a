"""A chart-like bundle: what `helm template` of a typical application chart renders, one object of
every workload kind minikcp serves beside Deployments (written for these tests)."""

from __future__ import annotations

from typing import Any

import yaml

RELEASE = "shop"


def _labels(component: str) -> dict[str, str]:
    return {
        "app.kubernetes.io/name": "shop",
        "app.kubernetes.io/instance": RELEASE,
        "app.kubernetes.io/component": component,
        "app.kubernetes.io/managed-by": "Helm",
        "helm.sh/chart": "shop-1.4.2",
    }


def _selector(component: str) -> dict[str, str]:
    return {"app.kubernetes.io/instance": RELEASE, "app.kubernetes.io/component": component}


def _pod(component: str, image: str, **spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"labels": {**_selector(component), "app.kubernetes.io/name": "shop"}},
        "spec": {
            "containers": [
                {
                    "name": component,
                    "image": image,
                    "ports": [{"name": "http", "containerPort": 8080}],
                    "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}},
                }
            ],
            **spec,
        },
    }


def objects() -> list[dict[str, Any]]:
    return [
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": f"{RELEASE}-high", "labels": _labels("scheduling")},
            "value": 100000,
            "description": "Shop pods that must not be preempted by batch work",
        },
        {
            "apiVersion": "networking.k8s.io/v1",
            "kind": "IngressClass",
            "metadata": {"name": f"{RELEASE}-nginx", "labels": _labels("ingress")},
            "spec": {"controller": "k8s.io/ingress-nginx"},
        },
        {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": f"{RELEASE}-uploads", "labels": _labels("web")},
            "spec": {
                "accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": "5Gi"}},
                "storageClassName": "standard",
            },
        },
        {
            "apiVersion": "apps/v1",
            "kind": "StatefulSet",
            "metadata": {"name": f"{RELEASE}-db", "labels": _labels("db")},
            "spec": {
                "serviceName": f"{RELEASE}-db-headless",
                "replicas": 3,
                "selector": {"matchLabels": _selector("db")},
                "template": _pod("db", "postgres:16.4", priorityClassName=f"{RELEASE}-high"),
                "volumeClaimTemplates": [
                    {
                        "metadata": {"name": "data"},
                        "spec": {
                            "accessModes": ["ReadWriteOnce"],
                            "resources": {"requests": {"storage": "10Gi"}},
                        },
                    }
                ],
            },
        },
        {
            "apiVersion": "apps/v1",
            "kind": "DaemonSet",
            "metadata": {"name": f"{RELEASE}-logs", "labels": _labels("logs")},
            "spec": {
                "selector": {"matchLabels": _selector("logs")},
                "template": _pod(
                    "logs", "fluent-bit:3.1", nodeSelector={"kubernetes.io/os": "linux"}
                ),
            },
        },
        {
            "apiVersion": "batch/v1",
            "kind": "CronJob",
            "metadata": {"name": f"{RELEASE}-report", "labels": _labels("report")},
            "spec": {
                "schedule": "*/15 * * * *",
                "jobTemplate": {
                    "spec": {
                        "template": _pod("report", "shop-report:1.4", restartPolicy="OnFailure")
                    }
                },
            },
        },
        {
            "apiVersion": "autoscaling/v2",
            "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": f"{RELEASE}-web", "labels": _labels("web")},
            "spec": {
                "scaleTargetRef": {
                    "apiVersion": "apps/v1",
                    "kind": "Deployment",
                    "name": "shop-web",
                },
                "minReplicas": 2,
                "maxReplicas": 10,
                "metrics": [
                    {
                        "type": "Resource",
                        "resource": {
                            "name": "cpu",
                            "target": {"type": "Utilization", "averageUtilization": 70},
                        },
                    }
                ],
            },
        },
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": f"{RELEASE}-db", "labels": _labels("db")},
            "spec": {"maxUnavailable": 1, "selector": {"matchLabels": _selector("db")}},
        },
        {
            "apiVersion": "networking.k8s.io/v1",
            "kind": "NetworkPolicy",
            "metadata": {"name": f"{RELEASE}-db", "labels": _labels("db")},
            "spec": {
                "podSelector": {"matchLabels": _selector("db")},
                "ingress": [
                    {
                        "from": [{"podSelector": {"matchLabels": _selector("web")}}],
                        "ports": [{"port": 5432}],
                    }
                ],
            },
        },
        {
            "apiVersion": "discovery.k8s.io/v1",
            "kind": "EndpointSlice",
            "metadata": {
                "name": f"{RELEASE}-external-db",
                "labels": {**_labels("db"), "kubernetes.io/service-name": f"{RELEASE}-external"},
            },
            "addressType": "IPv4",
            "ports": [{"name": "postgres", "port": 5432}],
            "endpoints": [{"addresses": ["10.1.2.3"]}, {"addresses": ["10.1.2.4"]}],
        },
        {
            "apiVersion": "apps/v1",
            "kind": "ControllerRevision",
            "metadata": {"name": f"{RELEASE}-db-7d9f8c6b5", "labels": _labels("db")},
            "revision": 1,
            "data": {"spec": {"template": {"metadata": {"labels": _selector("db")}}}},
        },
    ]


def manifest() -> str:
    """The bundle as helm prints it: `---`-separated documents with a `# Source:` comment each."""
    docs = []
    for obj in objects():
        kind = obj["kind"].lower()
        docs.append(f"---\n# Source: shop/templates/{kind}.yaml\n" + yaml.safe_dump(obj))
    return "".join(docs)
