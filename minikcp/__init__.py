"""minikcp: a kcp-like Kubernetes API server serving many logical clusters from one store."""
