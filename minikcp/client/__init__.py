"""Client-side helpers for minikcp's own endpoints; they import nothing of the server."""
