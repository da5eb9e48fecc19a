"""The ServiceAccount admission plugin (plugin/pkg/admission/serviceaccount) for pod creates.

A pod without a ServiceAccount gets `default`; the one it names must exist (403 otherwise; the
`default` one is looked for again for a while, since a controller creates it just after its
namespace); unless the pod or the account says `automountServiceAccountToken: false`, every
container and init container mounts the projected `kube-api-access-<random>` volume (a bound
token, the `kube-root-ca.crt` ConfigMap's ca.crt, the namespace) read-only at
/var/run/secrets/kubernetes.io/serviceaccount; a pod without imagePullSecrets takes the
account's; an account annotated `kubernetes.io/enforce-mountable-secrets: "true"` limits the
pod's secrets to its own. Mirror pods are changed in nothing and may not reference accounts,
secrets or token projections.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Iterator, Mapping
from typing import Any, Final

from minikcp.machinery import errors, names
from minikcp.registry import admission, store
from minikcp.registry.namespace_defaults import DEFAULT_SERVICE_ACCOUNT, ROOT_CA_CONFIG_MAP
from minikcp.registry.objects import RequestContext, StoredObject

VOLUME_PREFIX: Final = "kube-api-access-"
MOUNT_PATH: Final = "/var/run/secrets/kubernetes.io/serviceaccount"
MIRROR_POD_ANNOTATION: Final = "kubernetes.io/config.mirror"
# serviceaccount.WarnOnlyBoundTokenExpirationSeconds: one hour and seven seconds.
TOKEN_EXPIRATION_SECONDS: Final = 3607
_DEFAULT_ATTEMPTS: Final = 10
ENFORCE_MOUNTABLE_SECRETS: Final = "kubernetes.io/enforce-mountable-secrets"
_TRUE: Final = frozenset({"1", "t", "T", "TRUE", "true", "True"})  # Go's strconv.ParseBool


def token_volume(name: str) -> dict[str, Any]:
    """TokenVolumeSource as a pod volume, with the defaults upstream writes explicitly."""
    token = {"expirationSeconds": TOKEN_EXPIRATION_SECONDS, "path": "token"}
    ca = {"name": ROOT_CA_CONFIG_MAP, "items": [{"key": "ca.crt", "path": "ca.crt"}]}
    namespace = {"apiVersion": "v1", "fieldPath": "metadata.namespace"}
    return {
        "name": name,
        "projected": {
            "sources": [
                {"serviceAccountToken": token},
                {"configMap": ca},
                {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": namespace}]}},
            ],
            "defaultMode": 0o644,
        },
    }


def should_automount(account: Mapping[str, Any], spec: Mapping[str, Any]) -> bool:
    """The pod's preference wins, then the account's; mounted unless one says false."""
    for owner in (spec, account):
        choice = owner.get("automountServiceAccountToken")
        if isinstance(choice, bool):
            return choice
    return True


def mount_token(spec: dict[str, Any]) -> None:
    """mountServiceAccountToken: every container without a mount at MOUNT_PATH mounts the token
    volume, added (once) if some container needs it and the pod has none."""
    volumes = spec.get("volumes") or []
    volume_name = next(
        (v.get("name") for v in volumes if str(v.get("name", "")).startswith(VOLUME_PREFIX)), None
    )
    has_volume = volume_name is not None
    if volume_name is None:
        volume_name = names.generate_name(VOLUME_PREFIX)
    mount = {"name": volume_name, "readOnly": True, "mountPath": MOUNT_PATH}
    needed = False
    for field in ("initContainers", "containers"):
        containers = spec.get(field)
        if not containers:
            continue
        # New container dicts: the caller's may share them (a controller's pod template).
        changed = []
        for container in containers:
            mounts = container.get("volumeMounts") or []
            if not any(m.get("mountPath") == MOUNT_PATH for m in mounts):
                container = {**container, "volumeMounts": [*mounts, dict(mount)]}
                needed = True
            changed.append(container)
        spec[field] = changed
    if needed and not has_volume:
        spec["volumes"] = [*volumes, token_volume(volume_name)]


def secret_reference_error(account: Mapping[str, Any], spec: Mapping[str, Any]) -> str | None:
    """limitSecretReferences, for an account annotated to enforce mountable secrets: the pod's
    secret volumes, env secretKeyRefs and imagePullSecrets must be among the account's."""
    meta = account.get("metadata") or {}
    if (meta.get("annotations") or {}).get(ENFORCE_MOUNTABLE_SECRETS) not in _TRUE:
        return None
    name = meta.get("name", "")
    mountable = {ref.get("name") for ref in account.get("secrets") or ()}
    for volume in spec.get("volumes") or ():
        secret = (volume.get("secret") or {}).get("secretName") if "secret" in volume else None
        if secret is not None and secret not in mountable:
            return (
                f'volume with secret.secretName="{secret}" is not allowed because service '
                f"account {name} does not reference that secret"
            )
    for field, what in (("initContainers", "init container"), ("containers", "container")):
        for container in spec.get(field) or ():
            for env in container.get("env") or ():
                ref = (env.get("valueFrom") or {}).get("secretKeyRef")
                if ref and ref.get("name") not in mountable:
                    return (
                        f"{what} {container.get('name', '')} with envVar {env.get('name', '')} "
                        f'referencing secret.secretName="{ref.get("name", "")}" is not allowed '
                        f"because service account {name} does not reference that secret"
                    )
    pullable = {ref.get("name") for ref in account.get("imagePullSecrets") or ()}
    for i, ref in enumerate(spec.get("imagePullSecrets") or ()):
        if ref.get("name") not in pullable:
            return (
                f'imagePullSecrets[{i}].name="{ref.get("name", "")}" is not allowed because '
                f"service account {name} does not reference that imagePullSecret"
            )
    return None


def _secret_names(spec: Mapping[str, Any]) -> Iterator[str]:
    """The secrets a pod references (podutil.VisitPodSecretNames, the parts mirror pods use)."""
    for ref in spec.get("imagePullSecrets") or []:
        yield ref.get("name", "")
    for volume in spec.get("volumes") or []:
        if "secret" in volume:
            yield volume["secret"].get("secretName", "")
        for source in (volume.get("projected") or {}).get("sources") or []:
            if "secret" in source:
                yield source["secret"].get("name", "")
    for field in ("initContainers", "containers", "ephemeralContainers"):
        for container in spec.get(field) or []:
            for source in container.get("envFrom") or []:
                if "secretRef" in source:
                    yield source["secretRef"].get("name", "")
            for env in container.get("env") or []:
                ref = (env.get("valueFrom") or {}).get("secretKeyRef")
                if ref:
                    yield ref.get("name", "")


class ServiceAccountAdmission(admission.Admission):
    def __init__(self, accounts: store.ResourceStore) -> None:
        self._accounts = accounts

    async def admit_create(self, ctx: RequestContext, obj: dict[str, Any]) -> None:
        meta = obj.get("metadata") or {}
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            return  # validation refuses it next
        name = str(meta.get("name") or "Unknown")
        prefix = meta.get("generateName")
        if prefix and name.startswith(prefix) and len(name) == len(prefix) + names.RANDOM_LENGTH:
            name = prefix  # upstream admits before the name is generated
        if MIRROR_POD_ANNOTATION in (meta.get("annotations") or {}):
            self._check_mirror_pod(name, spec)
            return
        if not spec.get("serviceAccountName"):
            spec["serviceAccountName"] = spec.get("serviceAccount") or DEFAULT_SERVICE_ACCOUNT
        account_name = str(spec["serviceAccountName"])
        spec["serviceAccount"] = account_name
        namespace = str(meta.get("namespace") or "")
        found = await self._account(ctx, namespace, account_name)
        if found is None:
            raise errors.forbidden(
                "pods",
                name,
                f"error looking up service account {namespace}/{account_name}: "
                f'serviceaccount "{account_name}" not found',
            )
        account = found.view()
        if should_automount(account, spec):
            mount_token(spec)
        if not spec.get("imagePullSecrets") and account.get("imagePullSecrets"):
            spec["imagePullSecrets"] = [
                {"name": ref.get("name", "")} for ref in account["imagePullSecrets"]
            ]
        refused = secret_reference_error(account, spec)
        if refused is not None:
            raise errors.forbidden("pods", name, refused)

    async def _account(self, ctx: RequestContext, namespace: str, name: str) -> StoredObject | None:
        """getServiceAccount: `default` is looked for a few times (100-200 ms apart)."""
        attempts = _DEFAULT_ATTEMPTS if name == DEFAULT_SERVICE_ACCOUNT else 1
        interval = (100 + random.randrange(100)) / 1000
        for attempt in range(attempts):
            if attempt:
                await asyncio.sleep(interval)
            found = await self._accounts.find(ctx, namespace, name)
            if found is not None:
                return found
        return None

    @staticmethod
    def _check_mirror_pod(name: str, spec: Mapping[str, Any]) -> None:
        if spec.get("serviceAccountName"):
            raise errors.forbidden("pods", name, "a mirror pod may not reference service accounts")
        if any(True for _ in _secret_names(spec)):
            raise errors.forbidden("pods", name, "a mirror pod may not reference secrets")
        for volume in spec.get("volumes") or []:
            for source in (volume.get("projected") or {}).get("sources") or []:
                if "serviceAccountToken" in source:
                    raise errors.forbidden(
                        "pods",
                        name,
                        "a mirror pod may not use ServiceAccountToken volume projections",
                    )
