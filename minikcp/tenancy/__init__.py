"""Logical clusters and workspaces: names, paths and their resolution."""
