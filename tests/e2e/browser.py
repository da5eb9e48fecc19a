"""A headless Chromium driven over the DevTools protocol (the system's `chromium`)."""

from __future__ import annotations

import base64
import itertools
import json
import shutil
import subprocess
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

import websocket


def chromium_binary() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


class Browser:
    """One page of a headless Chromium; console errors and exceptions are collected."""

    def __init__(self, workdir: Path) -> None:
        binary = chromium_binary()
        assert binary is not None, "chromium is not installed (scripts/test installs it)"
        profile = workdir / "chromium-profile"
        profile.mkdir(parents=True, exist_ok=True)
        self._log = (workdir / "chromium.log").open("wb")
        self._process = subprocess.Popen(
            [
                binary,
                "--headless=new",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-dev-shm-usage",
                "--no-first-run",
                "--disable-extensions",
                "--disable-background-networking",
                "--ignore-certificate-errors",
                "--remote-debugging-port=0",
                "--remote-allow-origins=*",
                f"--user-data-dir={profile}",
                "--window-size=1280,900",
                "about:blank",
            ],
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )
        port = self._devtools_port(profile)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10) as r:
            pages = [t for t in json.loads(r.read()) if t["type"] == "page"]
        self._ws = websocket.create_connection(pages[0]["webSocketDebuggerUrl"], timeout=60)
        self._ids = itertools.count(1)
        self._replies: dict[int, dict[str, Any]] = {}
        self._cond = threading.Condition()
        self.errors: list[dict[str, Any]] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        for domain in ("Page", "Runtime", "Log"):
            self.call(f"{domain}.enable")

    def _devtools_port(self, profile: Path) -> int:
        marker = profile / "DevToolsActivePort"
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if marker.exists():
                first = marker.read_text().splitlines()[:1]
                if first and first[0].isdigit():
                    return int(first[0])
            if self._process.poll() is not None:
                break
            time.sleep(0.1)
        raise RuntimeError("chromium did not start its DevTools endpoint")

    def _read(self) -> None:
        while True:
            try:
                message = json.loads(self._ws.recv())
            except (websocket.WebSocketException, OSError, ValueError):
                return
            if "id" in message:
                with self._cond:
                    self._replies[message["id"]] = message
                    self._cond.notify_all()
                continue
            method, params = message.get("method"), message.get("params", {})
            if method == "Runtime.exceptionThrown":
                self.errors.append(params["exceptionDetails"])
            elif method == "Runtime.consoleAPICalled" and params["type"] in ("error", "assert"):
                self.errors.append(params)
            elif method == "Log.entryAdded" and params["entry"]["level"] == "error":
                self.errors.append(params["entry"])

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        ident = next(self._ids)
        self._ws.send(json.dumps({"id": ident, "method": method, "params": params}))
        with self._cond:
            if not self._cond.wait_for(lambda: ident in self._replies, timeout=60):
                raise TimeoutError(method)
            reply = self._replies.pop(ident)
        if "error" in reply:
            raise RuntimeError(f"{method}: {reply['error']}")
        return dict(reply.get("result", {}))

    def navigate(self, url: str) -> None:
        self.call("Page.navigate", url=url)

    def evaluate(self, expression: str) -> Any:
        result = self.call(
            "Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True
        )
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def wait_for(self, expression: str, timeout: float = 20) -> Any:
        """Waits until the expression is truthy in the page; its value."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                value = self.evaluate(expression)
            except RuntimeError as exc:  # e.g. the page navigated away while evaluating
                value, failure = None, exc
            else:
                failure = None
            if value:
                return value
            if time.monotonic() > deadline:
                raise AssertionError(f"not true within {timeout}s: {expression}") from failure
            time.sleep(0.1)

    def screenshot(self, path: Path) -> Path:
        data = self.call("Page.captureScreenshot", format="png")["data"]
        path.write_bytes(base64.b64decode(data))
        return path

    def close(self) -> None:
        try:
            self._ws.close()
        finally:
            self._process.terminate()
            try:
                self._process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
            self._log.close()
