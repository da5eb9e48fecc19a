"""Logical-cluster names and workspace paths, as kcp spells them.

A path is names joined by `:` (`root:org:team`): its first segment is a logical cluster name (the
root of a tree, normally `root`), each further segment a Workspace in the cluster before it. A
single segment is a logical cluster name. Workspaces create logical clusters under random names
(kcp's: 16 base36 characters of a sha224), so renaming a path never moves stored data.
"""

from __future__ import annotations

import hashlib
import os

from minikcp.machinery import errors, names

ROOT = "root"
SEPARATOR = ":"
# Segments in a path, root included. Deeper trees are refused when created and when addressed.
MAX_DEPTH = 16
_BASE36 = "0123456789abcdefghijklmnopqrstuvwxyz"
_NAME_LENGTH = 16


def is_name(text: str) -> bool:
    """A logical cluster name rather than a path: one segment, or kcp's `system:*` names."""
    return SEPARATOR not in text or text.startswith("system:")


def segments(path: str) -> list[str]:
    return path.split(SEPARATOR)


def join(parent: str, name: str) -> str:
    return f"{parent}{SEPARATOR}{name}"


def parent_of(path: str) -> str | None:
    """`root:a:b` -> `root:a`; a single segment has no parent."""
    head, sep, _ = path.rpartition(SEPARATOR)
    return head if sep else None


def depth(path: str) -> int:
    return path.count(SEPARATOR) + 1


def check_depth(path: str) -> None:
    if depth(path) > MAX_DEPTH:
        raise errors.bad_request(
            f"workspace path {path!r} is deeper than the limit of {MAX_DEPTH} segments"
        )


def workspace_name_errors(name: str) -> list[str]:
    """A workspace's name becomes a path segment: a DNS-1123 label, as kcp's CRD requires."""
    return names.dns1123_label_errors(name)


def new_cluster_name() -> str:
    """A fresh logical cluster name: 16 base36 characters of sha224(32 random bytes), as kcp."""
    number = int.from_bytes(hashlib.sha224(os.urandom(32)).digest(), "big")
    out = []
    for _ in range(_NAME_LENGTH):
        number, digit = divmod(number, 36)
        out.append(_BASE36[digit])
    return "".join(out)
