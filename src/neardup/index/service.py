"""The HTTP service: a :class:`~neardup.index.store.NearDupIndex` behind a small JSON API.

Endpoints (JSON in and out; fingerprints are 16 hex digits in responses and may be 16 hex
digits, ``0x`` hex or decimal in requests; timestamps are seconds since the epoch or ISO 8601):

=========================================  =====================================================
``POST /v1/documents``                     add one document ``{id, text | fingerprint,
                                           timestamp?}`` or a batch ``{"documents": [...]}``;
                                           each result: ``status`` (``new`` / ``duplicate`` /
                                           ``exists``), ``duplicate_id``, ``original_id``,
                                           ``matches`` ...
``POST /v1/query``                         the same probe without storing: one
                                           ``{text | fingerprint}`` or ``{"documents": [...]}``
``GET /v1/documents/{id}``                 the stored record (404 if unknown)
``DELETE /v1/documents/{id}``              remove it (404 if unknown)
``GET /v1/stats``                          counts, settings, memory
``GET /healthz``                           liveness (never needs the token)
``GET /docs``, ``GET /openapi.json``       the OpenAPI description
=========================================  =====================================================

Both kinds of index are served: each match carries its ``distance`` in bits (SimHash index) or
its ``similarity`` (MinHash index: the verification measure, e.g. the LCS resemblance in 0..1).
A MinHash index is probed and fed with texts only (a fingerprint is refused with 422), and
``hamming_k`` applies to SimHash indexes only.

Rules:
    - **Auth**: with a token, every ``/v1`` request needs ``Authorization: Bearer <token>``;
      without it or with a wrong one the answer is 401.
    - **Limits**: a body over ``max_body_bytes`` (default 8 MiB) or a batch of more than
      ``max_batch`` documents (default 1,000) is refused with 413 before anything is done.
    - **Validation**: malformed JSON is 400; a body that does not fit the schema, a bad
      fingerprint or timestamp, or an ID repeated inside a batch is 422; an ID that is already
      stored is 409 (unless ``"if_exists": "skip"``). The whole batch is checked before anything
      is written, and a batch is written in one transaction: a refused request changes nothing.
    - An acknowledged add (a 200 answer) is committed (see the store's durability notes).
    - A service opened read-only (``--read-only``) answers writes with 403 and sees the writes
      of the index's writer process as they are committed.

Example:
    >>> import tempfile
    >>> from fastapi.testclient import TestClient
    >>> index = NearDupIndex.create(tempfile.mkdtemp() + "/idx")
    >>> client = TestClient(create_app(index))
    >>> r = client.post("/v1/documents", json={"id": "a", "text": "one two three four"})
    >>> r.json()["status"]
    'new'
    >>> client.post("/v1/query", json={"text": "One two three, four!"}).json()["duplicate_id"]
    'a'
    >>> index.close()
"""

from __future__ import annotations

import hmac
import ipaddress
import json
from collections.abc import Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Literal

from fastapi import FastAPI, HTTPException, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
from fastapi.routing import APIRoute
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictInt,
    StrictStr,
    ValidationError,
    field_validator,
    model_validator,
)

from neardup._version import __version__
from neardup.index.store import (
    DEFAULT_LIMIT,
    MAX_ID_LENGTH,
    MAX_LIMIT,
    DocumentExistsError,
    NearDupIndex,
    ReadOnlyIndexError,
)
from neardup.ids import check_id
from neardup.pipeline import MAX_HAMMING_K

__all__ = ["create_app", "serve", "DEFAULT_MAX_BATCH", "DEFAULT_MAX_BODY_BYTES"]

DEFAULT_MAX_BATCH = 1000
"""Most documents in one request."""
DEFAULT_MAX_BODY_BYTES = 8 * 1024 * 1024
"""Largest request body, in bytes."""

Fingerprint = StrictStr | StrictInt
Timestamp = StrictInt | float | StrictStr


# --------------------------------------------------------------------------------------------
# Schemas
# --------------------------------------------------------------------------------------------


class _Probe(BaseModel):
    model_config = ConfigDict(extra="forbid")

    text: StrictStr | None = Field(
        None, description="The document text (fingerprinted with the index's settings)."
    )
    fingerprint: Fingerprint | None = Field(
        None, description="Or its 64-bit SimHash: 16 hex digits, 0x-hex, or a decimal number."
    )

    @model_validator(mode="after")
    def _one_of(self):
        if (self.text is None) == (self.fingerprint is None):
            raise ValueError("give exactly one of 'text' and 'fingerprint'")
        return self


class DocumentIn(_Probe):
    """A document to add."""

    id: StrictStr = Field(
        min_length=1,
        max_length=MAX_ID_LENGTH,
        description="Unique document ID: 1..1024 characters, no control characters "
        "(see neardup.ids).",
    )
    timestamp: Timestamp | None = Field(
        None, description="When it was written: seconds since the epoch or ISO 8601 (default 0)."
    )

    @field_validator("id")
    @classmethod
    def _valid_id(cls, value: str) -> str:
        return check_id(value, "id")


class AddOne(DocumentIn):
    """Add one document."""

    if_exists: Literal["error", "skip"] = Field(
        "error", description="If the ID is stored: 409, or skip it."
    )
    limit: int = Field(DEFAULT_LIMIT, ge=0, le=MAX_LIMIT, description="Matches to list.")


class AddBatch(BaseModel):
    """Add a batch of documents, in order, in one transaction."""

    model_config = ConfigDict(extra="forbid")
    documents: list[DocumentIn]
    if_exists: Literal["error", "skip"] = "error"
    limit: int = Field(DEFAULT_LIMIT, ge=0, le=MAX_LIMIT)


class ProbeIn(_Probe):
    """A probe of a batch query."""

    id: StrictStr | None = Field(
        None, min_length=1, max_length=MAX_ID_LENGTH, description="Echoed back."
    )

    @field_validator("id")
    @classmethod
    def _valid_id(cls, value: str | None) -> str | None:
        return None if value is None else check_id(value, "id")


class QueryOne(ProbeIn):
    """Query one text or fingerprint (nothing is stored)."""

    hamming_k: int | None = Field(
        None, ge=0, le=MAX_HAMMING_K, description="At most the index's k."
    )
    limit: int = Field(DEFAULT_LIMIT, ge=0, le=MAX_LIMIT)


class QueryBatch(BaseModel):
    """Query a batch of probes."""

    model_config = ConfigDict(extra="forbid")
    documents: list[ProbeIn]
    hamming_k: int | None = Field(None, ge=0, le=MAX_HAMMING_K)
    limit: int = Field(DEFAULT_LIMIT, ge=0, le=MAX_LIMIT)


class MatchOut(BaseModel):
    id: str
    distance: int | None = Field(
        None, description="SimHash index: Hamming distance in bits (absent for MinHash)."
    )
    similarity: float | None = Field(
        None, description="MinHash index: the verification measure in 0..1 (absent for SimHash)."
    )
    duplicate_id: str
    original_id: str


class AddOut(BaseModel):
    id: str
    status: Literal["new", "duplicate", "exists"]
    fingerprint: str
    duplicate_id: str
    original_id: str
    is_original: bool
    group_size: int
    match_count: int
    matches: list[MatchOut]


class AddBatchOut(BaseModel):
    results: list[AddOut]


class QueryOut(BaseModel):
    id: str | None = None
    status: Literal["new", "duplicate"]
    fingerprint: str
    duplicate_id: str | None
    original_id: str | None
    match_count: int
    matches: list[MatchOut]


class QueryBatchOut(BaseModel):
    results: list[QueryOut]


class RecordOut(BaseModel):
    id: str
    fingerprint: str
    timestamp: str | None
    timestamp_us: int
    position: int
    duplicate_id: str
    original_id: str
    is_original: bool
    group_size: int


class ErrorOut(BaseModel):
    detail: str


def _body_schema(*models: type[BaseModel]) -> dict:
    """An OpenAPI requestBody accepting any of ``models`` (bodies are parsed by hand so that
    each error names the one shape the body was meant to have)."""
    return {
        "requestBody": {
            "required": True,
            "content": {
                "application/json": {
                    "schema": {
                        "oneOf": [{"$ref": f"#/components/schemas/{m.__name__}"} for m in models]
                    }
                }
            },
        }
    }


_ERRORS = {
    400: {"model": ErrorOut, "description": "Malformed JSON"},
    401: {"model": ErrorOut, "description": "Missing or wrong bearer token"},
    413: {"model": ErrorOut, "description": "Body or batch too large"},
    422: {"model": ErrorOut, "description": "Invalid request"},
}


# --------------------------------------------------------------------------------------------
# Plumbing
# --------------------------------------------------------------------------------------------


def _json(data: Any, status: int = 200) -> Response:
    body = json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    return Response(body, status_code=status, media_type="application/json")


def _error(status: int, detail: str, headers: dict | None = None) -> Response:
    response = _json({"detail": detail}, status)
    if headers:
        response.headers.update(headers)
    return response


class _TooLarge(Exception):
    pass


class _BodyLimit:
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
                    await _error(400, "invalid Content-Length header")(scope, receive, send)
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
        await _error(413, f"request body must be at most {self.max_bytes} bytes")(
            scope, receive, send
        )


def _validation_message(error: ValidationError) -> str:
    parts = []
    for e in error.errors()[:10]:
        loc = ""
        for item in e.get("loc", ()):
            if isinstance(item, int):
                loc += f"[{item}]"
            elif item not in ("body",):
                loc += ("." if loc else "") + str(item)
        msg = e.get("msg", "invalid")
        msg = msg.removeprefix("Value error, ")
        parts.append(f"{loc}: {msg}" if loc else msg)
    more = len(error.errors()) - 10
    return "; ".join(parts) + (f"; and {more} more" if more > 0 else "")


async def _read_json(request: Request) -> Any:
    body = await request.body()
    if not body:
        raise HTTPException(400, "request body must be a JSON object")
    try:
        return json.loads(body)
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise HTTPException(400, f"request body is not valid JSON: {error}") from None
    except RecursionError:
        # The parser recurses once per nesting level; a body of 100,000 '[' exhausts the
        # stack. No valid request nests more than a few levels, so this is a client error.
        raise HTTPException(400, "request body is not valid JSON: nested too deeply") from None


def _parse(model: type[BaseModel], data: Any) -> Any:
    try:
        return model.model_validate(data)
    except ValidationError as error:
        raise HTTPException(422, _validation_message(error)) from None


def _check_batch(data: Any, max_batch: int) -> bool:
    """Whether ``data`` is a batch; 413 if it holds more than ``max_batch`` documents."""
    if not isinstance(data, dict):
        raise HTTPException(422, "request body must be a JSON object")
    if "documents" not in data:
        return False
    docs = data["documents"]
    if isinstance(docs, list) and len(docs) > max_batch:
        raise HTTPException(413, f"a batch may hold at most {max_batch} documents, got {len(docs)}")
    return True


class _DirectRoute(APIRoute):
    """An API route whose endpoint takes the request and returns a response itself: no
    dependency solving or response validation on the hot paths (the endpoint parses and
    validates its body with the same models, and they still document it in OpenAPI)."""

    def get_route_handler(self):
        endpoint = self.endpoint

        async def handler(request: Request) -> Response:
            return await endpoint(request)

        return handler


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


# --------------------------------------------------------------------------------------------
# The app
# --------------------------------------------------------------------------------------------


_DOCS_FALLBACK = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>neardup index: API</title></head>
<body><h1>neardup index: API</h1>
<p>The interactive page needs the Swagger UI files, which are not installed:
<code>pip install 'neardup[service]'</code>.</p>
<p>The API description: <a href="{openapi_url}">{openapi_url}</a>.</p></body></html>
"""

_DOCS_STATIC = "/docs/static"
"""Where the Swagger UI files are mounted."""


def _swagger_ui_files() -> Path | None:
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


def _offline_docs(app: FastAPI) -> None:
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

    folder = _swagger_ui_files()
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


def create_app(
    index: NearDupIndex,
    *,
    token: str | None = None,
    max_batch: int = DEFAULT_MAX_BATCH,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    close_index: bool = False,
) -> FastAPI:
    """The FastAPI application serving ``index`` (see the module docstring).

    Args:
        index: an open index (a writer, or a reader for a read-only service).
        token: bearer token required on ``/v1`` routes; None = no auth.
        max_batch: most documents per request, ``1..100000``.
        max_body_bytes: largest request body, ``1024..1 GiB``.
        close_index: close ``index`` when the application shuts down.

    Complexity: per request, parsing O(body) plus the index operation.

    Example:
        >>> import tempfile
        >>> from fastapi.testclient import TestClient
        >>> with NearDupIndex.create(tempfile.mkdtemp() + "/idx") as index:
        ...     client = TestClient(create_app(index, token="s3cret"))
        ...     client.get("/v1/stats").status_code, client.get("/healthz").status_code
        (401, 200)
    """
    if not isinstance(max_batch, int) or not 1 <= max_batch <= 100_000:
        raise ValueError(f"max_batch must be in 1..100000, got {max_batch!r}")
    if not isinstance(max_body_bytes, int) or not 1024 <= max_body_bytes <= 1 << 30:
        raise ValueError(f"max_body_bytes must be in 1024..{1 << 30}, got {max_body_bytes!r}")
    if token is not None and (not isinstance(token, str) or not token):
        raise ValueError("token must be a non-empty string or None")
    expected = token.encode("utf-8") if token else None

    def authorize(request: Request) -> None:
        # Checked inline rather than as a dependency: it is on every request's hot path.
        if expected is None:
            return
        header = request.headers.get("authorization", "")
        scheme, _, credentials = header.partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(
            credentials.strip().encode("utf-8"), expected
        ):
            raise HTTPException(
                401, "missing or wrong bearer token", headers={"WWW-Authenticate": "Bearer"}
            )

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        await run_in_threadpool(index.warm_up)
        yield
        if close_index:
            index.close()

    app = FastAPI(
        title="neardup index",
        version=__version__,
        description=(
            "Near-duplicate detection for crawlers: add pages and learn at once whether a "
            "near-duplicate (SimHash within k bits) is already stored, with its duplicate ID "
            "and original. Groups follow `neardup dedup --method simhash --grouping components`."
        ),
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
    )
    app.add_middleware(_BodyLimit, max_bytes=max_body_bytes)
    _offline_docs(app)

    def openapi() -> dict:
        # The request bodies are parsed by hand (see _body_schema): register their models.
        if app.openapi_schema is None:
            from fastapi.openapi.utils import get_openapi

            schema = get_openapi(
                title=app.title, version=app.version, description=app.description, routes=app.routes
            )
            components = schema.setdefault("components", {}).setdefault("schemas", {})
            schema["components"]["securitySchemes"] = {
                "HTTPBearer": {
                    "type": "http",
                    "scheme": "bearer",
                    "description": "The token given to `neardup serve --token`.",
                }
            }
            for model in (AddOne, AddBatch, QueryOne, QueryBatch):
                model_schema = model.model_json_schema(ref_template="#/components/schemas/{model}")
                for name, definition in model_schema.pop("$defs", {}).items():
                    components.setdefault(name, definition)
                components.setdefault(model.__name__, model_schema)
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = openapi
    secured = {"security": [{"HTTPBearer": []}]} if expected is not None else {}

    @app.exception_handler(HTTPException)
    async def _http_error(request: Request, exc: HTTPException):
        return _error(exc.status_code, str(exc.detail), getattr(exc, "headers", None))

    @app.exception_handler(RequestValidationError)
    async def _request_error(request: Request, exc: RequestValidationError):
        parts = []
        for e in exc.errors()[:10]:
            loc = ".".join(str(p) for p in e.get("loc", ()) if p not in ("body", "path"))
            msg = str(e.get("msg", "invalid")).removeprefix("Value error, ")
            parts.append(f"{loc}: {msg}" if loc else msg)
        return _error(422, "; ".join(parts) or "invalid request")

    async def _write(fn, *args, **kwargs):
        try:
            return await run_in_threadpool(fn, *args, **kwargs)
        except ReadOnlyIndexError:
            raise HTTPException(
                403, "this service is read-only (started with --read-only)"
            ) from None
        except DocumentExistsError as error:
            raise HTTPException(409, str(error)) from None
        except ValueError as error:
            raise HTTPException(422, str(error)) from None

    @app.get("/healthz", tags=["service"], summary="Liveness")
    async def healthz():
        """Always answers (no token needed): the service is up and the index open."""
        return _json(
            {
                "status": "ok",
                "documents": len(index),
                "mode": "readonly" if index.readonly else "writer",
            }
        )

    async def add_documents(request: Request):
        """Add `{id, text | fingerprint, timestamp?}`, or `{"documents": [...]}` (in order, one
        transaction). Each result says whether the document is `new` or a `duplicate` of stored
        ones, and gives its group's `duplicate_id` and `original_id` and its nearest matches."""
        authorize(request)
        data = await _read_json(request)
        if _check_batch(data, max_batch):
            batch = _parse(AddBatch, data)
            docs, if_exists, limit = batch.documents, batch.if_exists, batch.limit
        else:
            one = _parse(AddOne, data)
            docs, if_exists, limit = [one], one.if_exists, one.limit
        texts = [d.text for d in docs]
        use_text = [t is not None for t in texts]
        ids = [d.id for d in docs]
        stamps = [d.timestamp for d in docs]
        if all(use_text):
            kwargs = {"texts": texts}
        elif not any(use_text) or index.method == "minhash":
            # A MinHash index refuses fingerprints (422) in add_many.
            kwargs = {"fingerprints": [d.fingerprint for d in docs]}
        else:
            # Mixed batch: fingerprint the texts first, so the whole batch is one transaction.
            fps = await run_in_threadpool(index.fingerprint, [t for t in texts if t is not None])
            it = iter(fps.tolist())
            kwargs = {
                "fingerprints": [
                    next(it) if t is not None else d.fingerprint for t, d in zip(texts, docs)
                ]
            }
        results = await _write(
            index.add_many, ids, timestamps=stamps, if_exists=if_exists, limit=limit, **kwargs
        )
        out = [r.to_dict() for r in results]
        return _json({"results": out} if "documents" in data else out[0])

    async def query(request: Request):
        """Which stored documents are near-duplicates of a text or fingerprint: within k bits
        (SimHash index) or passing verification (MinHash index); nothing is stored.
        `duplicate_id` / `original_id` name the group the probe would join."""
        authorize(request)
        data = await _read_json(request)
        if _check_batch(data, max_batch):
            batch = _parse(QueryBatch, data)
            probes, k, limit = batch.documents, batch.hamming_k, batch.limit
        else:
            one = _parse(QueryOne, data)
            probes, k, limit = [one], one.hamming_k, one.limit
        ids = [p.id for p in probes]
        try:
            if all(p.text is not None for p in probes):
                kwargs = {"texts": [p.text for p in probes]}
            elif all(p.text is None for p in probes) or index.method == "minhash":
                # A MinHash index refuses fingerprints (422) in query_many.
                kwargs = {"fingerprints": [p.fingerprint for p in probes]}
            else:
                texts = [p.text for p in probes if p.text is not None]
                computed = iter(index.fingerprint(texts).tolist())
                kwargs = {"fingerprints": [
                    next(computed) if p.text is not None else p.fingerprint for p in probes]}
            results = index.query_many(
                hamming_k=k,
                limit=limit,
                ids=None if any(i is None for i in ids) else ids,
                **kwargs,
            )
        except ValueError as error:
            raise HTTPException(422, str(error)) from None
        out = []
        for ident, r in zip(ids, results):
            d = r.to_dict()
            if ident is not None:
                d = {"id": ident, **{key: v for key, v in d.items() if key != "id"}}
            out.append(d)
        return _json({"results": out} if "documents" in data else out[0])

    app.router.add_api_route(
        "/v1/documents",
        add_documents,
        methods=["POST"],
        tags=["documents"],
        summary="Add one document or a batch",
        response_model=AddOut | AddBatchOut,
        responses={
            **_ERRORS,
            403: {"model": ErrorOut, "description": "Read-only service"},
            409: {"model": ErrorOut, "description": "ID already stored"},
        },
        openapi_extra={**_body_schema(AddOne, AddBatch), **secured},
        route_class_override=_DirectRoute,
    )
    app.router.add_api_route(
        "/v1/query",
        query,
        methods=["POST"],
        tags=["documents"],
        summary="Probe without storing",
        response_model=QueryOut | QueryBatchOut,
        responses=_ERRORS,
        openapi_extra={**_body_schema(QueryOne, QueryBatch), **secured},
        route_class_override=_DirectRoute,
    )

    @app.get(
        "/v1/documents/{doc_id:path}",
        tags=["documents"],
        summary="A stored record",
        response_model=RecordOut,
        openapi_extra=secured,
        responses={401: _ERRORS[401], 404: {"model": ErrorOut, "description": "Unknown ID"}},
    )
    async def get_document(doc_id: str, request: Request):
        """The stored record: fingerprint, timestamp, position and group."""
        authorize(request)
        if not 1 <= len(doc_id) <= MAX_ID_LENGTH:
            raise HTTPException(422, f"id must have 1..{MAX_ID_LENGTH} characters")
        record = index.get(doc_id)
        if record is None:
            raise HTTPException(404, f"no document with id {doc_id!r}")
        return _json(record.to_dict())

    @app.delete(
        "/v1/documents/{doc_id:path}",
        tags=["documents"],
        summary="Remove a document",
        openapi_extra=secured,
        responses={
            401: _ERRORS[401],
            403: {"model": ErrorOut, "description": "Read-only service"},
            404: {"model": ErrorOut, "description": "Unknown ID"},
        },
    )
    async def delete_document(doc_id: str, request: Request):
        """Remove a document; its group is re-checked (new original, or a split)."""
        authorize(request)
        if not 1 <= len(doc_id) <= MAX_ID_LENGTH:
            raise HTTPException(422, f"id must have 1..{MAX_ID_LENGTH} characters")
        removed = await _write(index.remove, doc_id)
        if not removed:
            raise HTTPException(404, f"no document with id {doc_id!r}")
        return _json({"id": doc_id, "removed": True})

    @app.get(
        "/v1/stats",
        tags=["service"],
        summary="Index statistics",
        openapi_extra=secured,
        responses={401: _ERRORS[401]},
    )
    async def stats(request: Request):
        """Documents, groups, settings (k, shingle, hash), table plan, memory, open time."""
        authorize(request)
        return _json(await run_in_threadpool(index.stats))

    return app


def serve(
    path: str,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    token: str | None = None,
    readonly: bool = False,
    synchronous: str = "normal",
    max_batch: int = DEFAULT_MAX_BATCH,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    log_level: str = "warning",
    announce: Callable[[str], None] | None = None,
) -> None:
    """Open the index at ``path`` and serve it with uvicorn until interrupted; the index is
    closed (its tables cached) on shutdown. Binds to loopback by default.

    Args:
        path: the index directory.
        host, port: where to listen; port in ``0..65535`` (0 = any free port).
        token, max_batch, max_body_bytes: see :func:`create_app`.
        readonly: open the index read-only (several services may read one index).
        synchronous: durability of writes (see :class:`~neardup.index.store.NearDupIndex`).
        log_level: uvicorn's log level.
        announce: called with a one-line "serving ..." message once the index is open (so
            that nothing claims to serve an index that cannot be opened).

    Example (not run here: it blocks)::

        serve("crawl.idx", port=8000, token="s3cret")
    """
    import uvicorn

    if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
        raise ValueError(f"port must be in 0..65535, got {port!r}")
    index = NearDupIndex(path, readonly=readonly, synchronous=synchronous)
    try:
        if announce is not None:
            announce(f"serving {path} on http://{host}:{port} (docs: /docs)")
        app = create_app(
            index, token=token, max_batch=max_batch, max_body_bytes=max_body_bytes, close_index=True
        )
        config = uvicorn.Config(app, host=host, port=port, log_level=log_level, access_log=False)
        try:
            uvicorn.Server(config).run()
        except KeyboardInterrupt:
            pass  # uvicorn re-raises the signal it stopped on
    finally:
        index.close()
