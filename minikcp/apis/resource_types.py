"""The shared types of served kinds: `ResourceType`, its subresources and CRD data, the verbs.

They sit below everything else in `minikcp/apis` so that the modules which declare kinds (the
built-in catalog, the kcp-style kinds, CRDs) and those which use them all build on one place.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

Schema = Mapping[str, Any]

# Verbs as discovery lists them: sorted, as kube-apiserver's installer does.
CRUD_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")
STATUS_VERBS = ("get", "patch", "update")


@dataclass(frozen=True, slots=True)
class Subresource:
    name: str  # "status", "scale", "finalize"
    group: str  # of the kind the subresource speaks, e.g. "autoscaling" for scale
    version: str
    kind: str
    verbs: tuple[str, ...]

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version


@dataclass(frozen=True, slots=True)
class CustomResource:
    """What a CRD version adds to a served type; JSON kept as bytes so the type stays hashable.

    Two logical clusters with the same CRD get equal types (one store, one compiled schema);
    different schemas give different types.
    """

    schema: bytes  # the version's openAPIV3Schema
    printer_columns: bytes = b"[]"  # additionalPrinterColumns
    # subresources.scale: spec replicas, status replicas and label selector JSON paths.
    scale_paths: tuple[str, str, str] | None = None
    # Set for kinds bound from an APIExport: the export's identity hash, which keys the objects
    # apart from those of any other export (or CRD) of the same group and resource.
    identity: str = ""


@dataclass(frozen=True, slots=True)
class ResourceType:
    group: str  # "" for the core group
    version: str
    kind: str
    plural: str
    singular: str
    namespaced: bool
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    verbs: tuple[str, ...] = CRUD_VERBS
    list_kind: str = ""
    definition: str = ""  # the schema's name, e.g. "io.k8s.api.apps.v1.Deployment"
    subresources: tuple[Subresource, ...] = ()
    # Built-in kinds are decoded into Go structs upstream (type errors are 400 BadRequest);
    # CRD-derived kinds are validated against a structural schema (type errors are 422 Invalid).
    builtin: bool = True
    # The group/version/kind the objects are stored as; defaults to this type's own.
    storage_gvk: tuple[str, str, str] | None = None
    # Set for kinds served from a CustomResourceDefinition.
    custom: CustomResource | None = None
    # Types are dict keys on every request (their store, their reviewer): the hash is of the
    # names only (hashing every field, subresources and schema included, would cost more than
    # the lookup; equal types have equal names, so it agrees with the generated __eq__), and
    # computed once.
    _hash: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_hash", hash((self.group, self.version, self.plural, self.kind)))

    def __hash__(self) -> int:
        return self._hash

    @property
    def group_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def api_version(self) -> str:
        return self.group_version

    @property
    def storage_version_hash(self) -> str:
        """Upstream's hash: the first 8 bytes of sha256("group/version/kind"), base64."""
        group, version, kind = self.storage_gvk or (self.group, self.version, self.kind)
        digest = hashlib.sha256(f"{group}/{version}/{kind}".encode()).digest()
        return base64.b64encode(digest[:8]).decode()

    def subresource(self, name: str) -> Subresource | None:
        for sub in self.subresources:
            if sub.name == name:
                return sub
        return None

    def names(self) -> tuple[str, ...]:
        """Every name a client may use for this type: plural, singular, short names."""
        return (self.plural, self.singular, *self.short_names)
