"""In-process controllers (namespaces, CRDs, garbage collection, workspaces).

They call the registry in-process, never loopback HTTP.
"""
