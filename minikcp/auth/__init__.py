"""Certificates, authenticators and (later) RBAC."""
