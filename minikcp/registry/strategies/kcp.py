"""Strategies of minikcp's kcp-style kinds (`minikcp/apis/kcp_kinds.py`).

kcp serves these kinds from CRDs, so they behave like custom resources: the schema's type errors
and missing required fields are 422 causes, and spec changes bump the generation.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from minikcp.apis import validation
from minikcp.machinery import errors
from minikcp.registry import strategy


class KcpKindStrategy(strategy.Strategy):
    tracks_generation = True

    def validate(self, obj: Mapping[str, Any], old: Mapping[str, Any] | None) -> list[errors.Cause]:
        return validation.validate(self.rt, obj) + super().validate(obj, old)
