"""The HTTP plumbing of :mod:`neardup.index.service`: compact JSON responses and error bodies,
the request body limit, parsing request bodies with the API's models, routes whose endpoints
answer by themselves, and a ``/docs`` page that works offline.

It holds what any JSON service on FastAPI would need; the API itself (its schemas, routes and
rules) is :mod:`neardup.index.service`'s. Like it, this module needs the ``service`` extra.

Example:
    >>> json_response({"a": 1}).body
    b'{"a":1}'
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fastapi import FastAPI, HTTPException, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
from fastapi.routing import APIRoute
from pydantic import BaseModel, ValidationError

__all__ = [
    "BodyLimit",
    "DirectRoute",
    "error_handlers",
    "error_response",
    "json_response",
    "offline_docs",
    "parse_body",
    "read_json",
    "swagger_ui_files",
]


def json_response(data: Any, status: int = 200) -> Response:
    """A compact UTF-8 JSON response (no spaces, non-ASCII kept). O(size)."""
    body = json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    return Response(body, status_code=status, media_type="application/json")


def error_response(status: int, detail: str, headers: dict | None = None) -> Response:
    """The error answer of the API: ``{"detail": detail}`` with ``status`` and ``headers``."""
    response = json_response({"detail": detail}, status)
    if headers:
        response.headers.update(headers)
    return response


class _TooLarge(Exception):
    pass


class BodyLimit:
    """ASGI middleware: 413 for a body over ``max_bytes``, from its Content-Length or, without
    one, as soon as the streamed body passes the limit."""

    def __init__(self, app, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        for name, value in scope.get("headers", ()):
            if name == b"content-length":
                try:
                    length = int(value)
                except ValueError:
                    length = -1
                if length < 0:
                    await error_response(400, "invalid Content-Length header")(scope, receive, send)
                    return
                if length > self.max_bytes:
                    await self._refuse(scope, receive, send)
                    return
        seen = 0
        started = False

        async def limited_receive():
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_bytes:
                    raise _TooLarge
            return message

        async def tracking_send(message):
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, limited_receive, tracking_send)
        except _TooLarge:
            if not started:
                await self._refuse(scope, receive, send)

    async def _refuse(self, scope, receive, send):
        await error_response(413, f"request body must be at most {self.max_bytes} bytes")(
            scope, receive, send
        )


def _validation_message(error: ValidationError) -> str:
    return _errors_message(error.errors(), rooted=False)


def _errors_message(errors: list, rooted: bool) -> str:
    """The first ten validation errors, each as ``field.path: message``. FastAPI roots
    (``rooted``) a location in ``body``, ``path`` or ``query``; only that root is dropped, so
    that a field a client named ``body`` is still named. O(errors)."""
    parts = []
    for e in errors[:10]:
        location = list(e.get("loc", ()))
        if rooted and location and location[0] in ("body", "path", "query"):
            location = location[1:]
        loc = ""
        for item in location:
            loc += f"[{item}]" if isinstance(item, int) else ("." if loc else "") + str(item)
        msg = str(e.get("msg", "invalid")).removeprefix("Value error, ")
        parts.append(f"{loc}: {msg}" if loc else msg)
    more = len(errors) - 10
    return "; ".join(parts) + (f"; and {more} more" if more > 0 else "")


async def read_json(request: Request) -> Any:
    """The request body parsed as JSON; 400 if it is empty or not JSON. O(body)."""
    body = await request.body()
    if not body:
        raise HTTPException(400, "request body must be a JSON object")
    try:
        return json.loads(body)
    except ValueError as error:
        # JSONDecodeError, UnicodeDecodeError, and an integer of over 4,300 digits, which
        # Python refuses to convert.
        raise HTTPException(400, f"request body is not valid JSON: {error}") from None
    except RecursionError:
        # The parser recurses once per nesting level; a body of 100,000 '[' exhausts the
        # stack. No valid request nests more than a few levels, so this is a client error.
        raise HTTPException(400, "request body is not valid JSON: nested too deeply") from None


def parse_body(model: type[BaseModel], data: Any) -> Any:
    """``data`` validated as ``model``; 422 naming the first problems (at most 10). O(data)."""
    try:
        return model.model_validate(data)
    except ValidationError as error:
        raise HTTPException(422, _validation_message(error)) from None


class DirectRoute(APIRoute):
    """An API route whose endpoint takes the request and returns a response itself: no
    dependency solving or response validation on the hot paths (the endpoint parses and
    validates its body with the same models, and they still document it in OpenAPI)."""

    def get_route_handler(self):
        endpoint = self.endpoint

        async def handler(request: Request) -> Response:
            return await endpoint(request)

        return handler


def error_handlers(app: FastAPI) -> None:
    """Every error answers ``{"detail": "..."}``, with its status and headers."""

    @app.exception_handler(HTTPException)
    async def _http_error(request: Request, exc: HTTPException):
        return error_response(exc.status_code, str(exc.detail), getattr(exc, "headers", None))

    @app.exception_handler(RequestValidationError)
    async def _request_error(request: Request, exc: RequestValidationError):
        return error_response(
            422, _errors_message(list(exc.errors()), rooted=True) or "invalid request"
        )


_DOCS_FALLBACK = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>neardup index: API</title></head>
<body><h1>neardup index: API</h1>
<p>The interactive page needs the Swagger UI files, which are not installed:
<code>pip install 'neardup[service]'</code>.</p>
<p>The API description: <a href="{openapi_url}">{openapi_url}</a>.</p></body></html>
"""

_DOCS_STATIC = "/docs/static"
"""Where the Swagger UI files are mounted."""


def swagger_ui_files() -> Path | None:
    """The folder of the installed Swagger UI files (from ``fastapi-offline``), or None when
    they are not installed."""
    try:
        import fastapi_offline
    except ImportError:
        return None
    folder = Path(fastapi_offline.__file__).parent / "static"
    # Checked rather than assumed: the folder is the package's layout, not its API, and a page
    # whose script is missing is blank, which is worse than the plain page.
    wanted = ("swagger-ui-bundle.js", "swagger-ui.css", "favicon.png")
    return folder if all((folder / name).is_file() for name in wanted) else None


def offline_docs(app: FastAPI) -> None:
    """Serve ``/docs`` from the installed Swagger UI files, so that it works without internet
    access; without them, a plain page linking ``/openapi.json``. Like FastAPI's own pages,
    neither needs the token, and their URLs start with the ASGI ``root_path`` (a proxy's
    prefix).

    Why not FastAPI's page: it loads its scripts from a CDN and is blank offline. Why
    ``fastapi-offline``'s files: they are Swagger UI 5, the first to read OpenAPI 3.1, which
    FastAPI writes; ``swagger-ui-bundle`` 1.1 ships Swagger UI 4.15, which loads offline but
    only says "Unable to render this definition".
    """
    from html import escape

    from fastapi.responses import HTMLResponse

    folder = swagger_ui_files()
    if folder is None:

        @app.get("/docs", include_in_schema=False)
        def docs_fallback(request: Request) -> HTMLResponse:
            root = request.scope.get("root_path", "")
            return HTMLResponse(_DOCS_FALLBACK.format(openapi_url=escape(f"{root}/openapi.json")))

        return
    from fastapi.openapi.docs import get_swagger_ui_html
    from fastapi.staticfiles import StaticFiles

    app.mount(_DOCS_STATIC, StaticFiles(directory=folder), name="swagger-ui")

    @app.get("/docs", include_in_schema=False)
    def docs(request: Request) -> HTMLResponse:
        root = request.scope.get("root_path", "")
        return get_swagger_ui_html(
            openapi_url=f"{root}/openapi.json",
            title="neardup index: API",
            swagger_js_url=f"{root}{_DOCS_STATIC}/swagger-ui-bundle.js",
            swagger_css_url=f"{root}{_DOCS_STATIC}/swagger-ui.css",
            # Given, because the default icon is fetched from fastapi.tiangolo.com.
            swagger_favicon_url=f"{root}{_DOCS_STATIC}/favicon.png",
        )
