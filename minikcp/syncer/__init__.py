"""The syncer: pushes workloads to physical clusters and brings status back.

It calls the registry in-process, never loopback HTTP.
"""
