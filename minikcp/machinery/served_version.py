"""The Kubernetes version minikcp serves (its schemas are pinned to this minor): what `/version`
answers and `minikcp version` prints, apart from the server so the command loads none of it."""

from __future__ import annotations

SERVED_MINOR = "32"
GIT_VERSION = "v1.32.0-minikcp"
