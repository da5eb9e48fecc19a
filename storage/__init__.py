"""A revisioned key-value store with an ordered event stream and an in-memory watch hub.

It knows nothing of Kubernetes or HTTP: keys are strings, values are bytes.
"""
