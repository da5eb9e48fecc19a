"""In-process controllers that every minikcp runs (CRDs, workspaces, RBAC aggregation).

They call the registry in-process, never loopback HTTP.
"""
