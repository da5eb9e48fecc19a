"""Pure Kubernetes machinery: selectors, patches, names, Status errors, tables, protobuf.

No I/O happens here: no sockets, no files opened at call time, no event loop, no storage.
Everything is a function of its arguments, so it is tested with tables and properties.
"""
