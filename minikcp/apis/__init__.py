"""The type catalog: built-in kinds, their schemas, OpenAPI documents and table printers.

It reads the upstream schemas shipped in kubernetes-validate; it knows nothing of storage or HTTP.
"""
