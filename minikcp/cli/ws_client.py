"""A minimal Kubernetes HTTPS client for `kubectl ws`: credentials as a kubeconfig gives them."""

from __future__ import annotations

import base64
import json
import os
import ssl
import tempfile
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any


class ClientError(Exception):
    """The server could not be reached."""


class Client:
    def __init__(
        self,
        server: str,
        cluster: dict[str, Any],
        user: dict[str, Any],
        *,
        base: Path,
        user_agent: str = "kubectl-ws/minikcp",
    ) -> None:
        self.server = server
        self._headers = {"Accept": "application/json", "User-Agent": user_agent}
        if user.get("token"):
            self._headers["Authorization"] = f"Bearer {user['token']}"
        self._ssl = self._context(cluster, user, base)

    @staticmethod
    def _data(entry: dict[str, Any], key: str, base: Path) -> bytes | None:
        if entry.get(f"{key}-data"):
            return base64.b64decode(entry[f"{key}-data"])
        if entry.get(key):
            path = Path(entry[key])
            return (path if path.is_absolute() else base / path).read_bytes()
        return None

    def _context(self, cluster: dict[str, Any], user: dict[str, Any], base: Path) -> ssl.SSLContext:
        ctx = ssl.create_default_context()
        if cluster.get("insecure-skip-tls-verify"):
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
        ca = self._data(cluster, "certificate-authority", base)
        if ca is not None:
            ctx.load_verify_locations(cadata=ca.decode())
        cert = self._data(user, "client-certificate", base)
        key = self._data(user, "client-key", base)
        if cert is not None and key is not None:
            # ssl loads client credentials from files only: a private file, removed at once.
            fd, name = tempfile.mkstemp(prefix="kubectl-ws-")
            try:
                with os.fdopen(fd, "wb") as handle:
                    handle.write(cert + b"\n" + key)
                ctx.load_cert_chain(name)
            finally:
                os.unlink(name)
        return ctx

    def request(
        self, method: str, url: str, body: Any = None, *, content_type: str = "application/json"
    ) -> tuple[int, Any]:
        data = json.dumps(body).encode() if body is not None else None
        headers = dict(self._headers)
        if data is not None:
            headers["Content-Type"] = content_type
        req = urllib.request.Request(url, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(req, context=self._ssl, timeout=30) as resp:
                return resp.status, _json(resp.read())
        except urllib.error.HTTPError as err:
            with err:
                return err.code, _json(err.read())
        except urllib.error.URLError as exc:
            raise ClientError(f"cannot reach {url}: {exc.reason}") from None
        except OSError as exc:
            raise ClientError(f"cannot reach {url}: {exc}") from None

    def get(self, url: str) -> tuple[int, Any]:
        return self.request("GET", url)

    def post(self, url: str, body: Any) -> tuple[int, Any]:
        return self.request("POST", url, body)


def _json(raw: bytes) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        return None
