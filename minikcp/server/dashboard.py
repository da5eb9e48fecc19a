"""`/dashboard/`: the read-only web page's files, its login exchange and logout.

The page itself talks to the ordinary API with the viewer's session cookie (app.py accepts it
on API paths from the dashboard's own origin only); nothing here reads cluster objects.
"""

from __future__ import annotations

from importlib import resources as package_files

import orjson
from aiohttp import web

from minikcp.auth import dashboard_sessions
from minikcp.machinery import errors
from minikcp.server import encoding

PREFIX = "/dashboard"
_FILES = {
    "index.html": "text/html",
    "app.js": "text/javascript",
    "style.css": "text/css",
}
# Everything comes from here; nothing inline, nothing from elsewhere.
_CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
    "img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)


def own_origin(request: web.Request) -> str:
    return f"{request.scheme}://{request.host}"


def _cookie(request: web.Request) -> str:
    return request.cookies.get(dashboard_sessions.COOKIE, "")


def _json(body: object, status: int = 200) -> web.Response:
    return web.Response(body=orjson.dumps(body), status=status, content_type=encoding.JSON)


class Dashboard:
    def __init__(self, sessions: dashboard_sessions.Sessions) -> None:
        self._sessions = sessions
        root = package_files.files("minikcp.server") / "dashboard"
        self._files = {name: (root / name).read_bytes() for name in _FILES}

    async def handle(self, request: web.Request) -> web.StreamResponse:
        sub = request.path[len(PREFIX) :]
        if sub == "":
            return web.Response(status=302, headers={"Location": PREFIX + "/"})
        if request.method == "POST" and sub in ("/login", "/logout"):
            if request.headers.get("Origin") != own_origin(request):
                raise dashboard_sessions.FOREIGN_ORIGIN
            return await (self._login(request) if sub == "/login" else self._logout(request))
        if request.method not in ("GET", "HEAD"):
            raise errors.method_not_allowed(request.method, request.path)
        if sub == "/session":
            user = await self._sessions.user(_cookie(request))
            if user is None:
                raise errors.StatusError(401, "Unauthorized", "Unauthorized")
            return _json({"user": user.name, "groups": list(user.groups)})
        name = "index.html" if sub == "/" else sub[1:]
        if name not in self._files:
            raise errors.StatusError(404, "NotFound", f"the page {request.path!r} is not found")
        return web.Response(
            body=self._files[name],
            content_type=_FILES[name],
            headers={
                "Content-Security-Policy": _CSP,
                "X-Content-Type-Options": "nosniff",
                "Cache-Control": "no-cache",
            },
        )

    async def _login(self, request: web.Request) -> web.Response:
        try:
            body = orjson.loads(await request.read())
            token = str(body["token"]) if isinstance(body, dict) else ""
        except (orjson.JSONDecodeError, KeyError):
            token = ""
        if not token:
            raise errors.bad_request('the body must be {"token": "<login token>"}')
        cookie, user, expires = await self._sessions.exchange(token)
        response = _json({"user": user.name, "groups": list(user.groups), "expires": int(expires)})
        response.set_cookie(
            dashboard_sessions.COOKIE,
            cookie,
            path="/",
            max_age=int(dashboard_sessions.SESSION_TTL_SECONDS),
            secure=True,
            httponly=True,
            samesite="Strict",
        )
        return response

    async def _logout(self, request: web.Request) -> web.Response:
        cookie = _cookie(request)
        if cookie:
            await self._sessions.end(cookie)
        response = _json({"loggedOut": True})
        response.del_cookie(dashboard_sessions.COOKIE, path="/")
        return response
