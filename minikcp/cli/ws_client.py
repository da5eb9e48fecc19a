"""A minimal Kubernetes HTTPS client for `kubectl ws`: credentials as a kubeconfig gives them."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from minikcp.client import credentials


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
        self._ssl = credentials.ssl_context(cluster, user, base)

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
