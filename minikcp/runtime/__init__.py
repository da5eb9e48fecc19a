"""Async building blocks for the in-process components (controllers, syncer).

Nothing here knows Kubernetes or imports the rest of minikcp.
"""
