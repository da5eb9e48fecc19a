"""What the review kinds answer (kubernetes pkg/registry/authorization/selfsubject*review and
pkg/registry/authentication/selfsubjectreview)."""

from __future__ import annotations

from typing import Any

from minikcp.apis import validation_meta as vm
from minikcp.machinery import errors, users
from minikcp.registry import reviews, store


class SelfSubjectAccessReviewStrategy(reviews.ReviewStrategy):
    """`kubectl auth can-i`: may the caller do what the spec describes?"""

    def validate(self, obj: dict[str, Any]) -> list[errors.Cause]:
        causes = super().validate(obj)
        meta = {k: v for k, v in obj["metadata"].items() if k != "managedFields"}
        if any(v not in (None, "", {}, []) for v in meta.values()):
            # Upstream compares the whole ObjectMeta with the zero value.
            causes.append(vm.invalid("metadata", meta, "must be empty"))
        return causes

    def answer(self, obj: dict[str, Any], user: users.UserInfo) -> dict[str, Any]:
        # There is no authorizer yet: every authenticated request is served, so the honest answer
        # is "allowed" for everybody. RBAC enforcement will decide here instead.
        obj["status"] = {"allowed": True}
        return obj


class SelfSubjectRulesReviewStrategy(reviews.ReviewStrategy):
    """`kubectl auth can-i --list`: what may the caller do in spec.namespace?"""

    def answer(self, obj: dict[str, Any], user: users.UserInfo) -> dict[str, Any]:
        if not obj.get("spec", {}).get("namespace"):
            raise errors.bad_request("no namespace on request")
        # Everything is allowed (see SelfSubjectAccessReviewStrategy): the rules of cluster-admin.
        # Upstream replies with a fresh object whose spec is empty.
        return {
            "kind": self.rt.kind,
            "apiVersion": self.rt.api_version,
            "metadata": {"creationTimestamp": None},
            "spec": {},
            "status": {
                "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}],
                "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
                "incomplete": False,
            },
        }


class SelfSubjectReviewStrategy(reviews.ReviewStrategy):
    """`kubectl auth whoami`: the caller's user info, as the authenticator saw it."""

    def answer(self, obj: dict[str, Any], user: users.UserInfo) -> dict[str, Any]:
        # Upstream replies with a fresh object, not the request.
        return {
            "kind": self.rt.kind,
            "apiVersion": self.rt.api_version,
            "metadata": {"creationTimestamp": store.now_rfc3339()},
            "status": {"userInfo": user.to_dict()},
        }
