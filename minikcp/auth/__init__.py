"""Certificates, authenticators, and requests turned into authorizer questions (the decision
itself is the registry's: registry/rbac_policy.py)."""
