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
import typing
from collections.abc import Callable
from contextlib import asynccontextmanager
from typing import Any, Literal

from fastapi import FastAPI, HTTPException, Request
from fastapi.concurrency import run_in_threadpool
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
    create_model,
    field_validator,
    model_validator,
)

from neardup._version import __version__
from neardup.candidates.plan import MAX_HAMMING_K
from neardup.ids import MAX_ID_LENGTH, check_id
from neardup.index.errors import (
    DocumentExistsError,
    ReadOnlyIndexError,
    VerificationTooLongError,
)
from neardup.index.results import (
    DEFAULT_LIMIT,
    MAX_LIMIT,
    AddResult,
    Match,
    QueryResult,
    Record,
    json_fields,
)
from neardup.index.service_http import (
    BodyLimit,
    DirectRoute,
    error_handlers,
    json_response,
    offline_docs,
    parse_body,
    read_json,
)
from neardup.index.settings import describe_settings
from neardup.index.store import NearDupIndex

__all__ = ["create_app", "serve", "DEFAULT_MAX_BATCH", "DEFAULT_MAX_BODY_BYTES"]

DEFAULT_MAX_BATCH = 1000
"""Most documents in one request."""
DEFAULT_MAX_BODY_BYTES = 8 * 1024 * 1024
"""Largest request body, in bytes."""
DEFAULT_MAX_VERIFY_WORK = 2_000_000_000
"""Most LCS work one request may spend verifying long texts (MinHash index), in word
operations: about 2 s (:meth:`~neardup.index.store.NearDupIndex.limit_verification`)."""

Fingerprint = StrictStr | StrictInt
Timestamp = StrictInt | StrictFloat | StrictStr


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

    @field_validator("text")
    @classmethod
    def _valid_text(cls, value: str | None) -> str | None:
        # JSON may escape a lone surrogate ("\\ud800"), which no UTF-8 text holds: the command
        # line refuses such text as invalid UTF-8, and so does the service.
        if value is not None:
            try:
                value.encode("utf-8")
            except UnicodeEncodeError as error:
                raise ValueError(
                    f"not valid Unicode: a lone surrogate at character {error.start}"
                ) from None
        return value

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
    limit: StrictInt = Field(DEFAULT_LIMIT, ge=0, le=MAX_LIMIT, description="Matches to list.")


class AddBatch(BaseModel):
    """Add a batch of documents, in order, in one transaction."""

    model_config = ConfigDict(extra="forbid")
    documents: list[DocumentIn]
    if_exists: Literal["error", "skip"] = "error"
    limit: StrictInt = Field(DEFAULT_LIMIT, ge=0, le=MAX_LIMIT)


class ProbeIn(_Probe):
    """A probe of a batch query."""

    id: StrictStr | None = Field(
        None, min_length=1, max_length=MAX_ID_LENGTH, description="Echoed back."
    )

    @field_validator("id")
    @classmethod
    def _valid_id(cls, value: str | None) -> str | None:
        return None if value is None else check_id(value, "id")


_COUNT_ALL = Field(
    False,
    description="MinHash index: verify every candidate, so that match_count counts every match "
    "(by default a probe with many candidates has each group's verified only until `limit` "
    "match, and match_count_exact says so).",
)


class QueryOne(ProbeIn):
    """Query one text or fingerprint (nothing is stored)."""

    hamming_k: StrictInt | None = Field(
        None, ge=0, le=MAX_HAMMING_K, description="At most the index's k."
    )
    limit: StrictInt = Field(DEFAULT_LIMIT, ge=0, le=MAX_LIMIT)
    count_all: StrictBool = _COUNT_ALL


class QueryBatch(BaseModel):
    """Query a batch of probes."""

    model_config = ConfigDict(extra="forbid")
    documents: list[ProbeIn]
    hamming_k: StrictInt | None = Field(None, ge=0, le=MAX_HAMMING_K)
    limit: StrictInt = Field(DEFAULT_LIMIT, ge=0, le=MAX_LIMIT)
    count_all: StrictBool = _COUNT_ALL


def _json_model(
    name: str, cls: type, nested: dict[type, type[BaseModel]] | None = None
) -> type[BaseModel]:
    """The pydantic model of the JSON form of a result class of :mod:`neardup.index.results`
    (:func:`~neardup.index.results.json_fields`), for the OpenAPI description; ``nested``
    gives the models of the result classes inside it. O(fields)."""
    nested = nested or {}
    fields: dict[str, Any] = {}
    for key, spec in json_fields(cls).items():
        kind = spec.type
        if typing.get_origin(kind) is list:
            (item,) = typing.get_args(kind)
            kind = list[nested.get(item, item)]
        fields[key] = (kind, Field(... if spec.required else None, description=spec.doc))
    return create_model(name, **fields)


MatchOut = _json_model("MatchOut", Match)
AddOut = _json_model("AddOut", AddResult, {Match: MatchOut})
QueryOut = _json_model("QueryOut", QueryResult, {Match: MatchOut})
RecordOut = _json_model("RecordOut", Record)


class AddBatchOut(BaseModel):
    results: list[AddOut]


class QueryBatchOut(BaseModel):
    results: list[QueryOut]


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


def _relation_text(settings) -> str:
    """What makes two documents near-duplicates in an index of ``settings``, in words."""
    if settings.method == "simhash":
        return f"SimHash fingerprints within {settings.hamming_k} bits"
    verification = settings.verification
    if verification is None:
        return f"MinHash estimate of Jaccard at least {settings.threshold:g}"
    if verification.measure == "lcs":
        return f"LCS resemblance at least {verification.threshold:g}, verified on the texts"
    return f"Jaccard similarity at least {verification.threshold:g}, verified on the texts"


def create_app(
    index: NearDupIndex,
    *,
    token: str | None = None,
    max_batch: int = DEFAULT_MAX_BATCH,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    close_index: bool = False,
    max_verify_work: int | None = DEFAULT_MAX_VERIFY_WORK,
) -> FastAPI:
    """The FastAPI application serving ``index`` (see the module docstring).

    Args:
        index: an open index (a writer, or a reader for a read-only service).
        token: bearer token required on ``/v1`` routes; None = no auth.
        max_batch: most documents per request, ``1..100000``.
        max_body_bytes: largest request body, ``1024..1 GiB``.
        close_index: close ``index`` when the application shuts down.
        max_verify_work: the index's limit of LCS work per request (MinHash; set on
            ``index`` with :meth:`~neardup.index.store.NearDupIndex.limit_verification`): a
            request that would spend more is refused with 413. None: no limit.

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
    index.limit_verification(max_verify_work)

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
            f"near-duplicate ({_relation_text(index.settings)}) is already stored, with its "
            "duplicate ID and original. Groups follow `neardup dedup "
            f"{describe_settings(index.settings)} --grouping components`."
        ),
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
    )
    app.add_middleware(BodyLimit, max_bytes=max_body_bytes)
    offline_docs(app)
    app.openapi = lambda: _openapi(app)
    error_handlers(app)
    routes = _Routes(index, token, max_batch)
    routes.add_to(app)
    return app


def _openapi(app: FastAPI) -> dict:
    """The OpenAPI description, made once: FastAPI's, plus the bearer scheme and the request
    body models (the bodies are parsed by hand, see :func:`_body_schema`)."""
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


async def _write(fn, *args, **kwargs):
    """Run an index write in the thread pool; its refusals become 403, 409, 413 and 422."""
    try:
        return await run_in_threadpool(fn, *args, **kwargs)
    except ReadOnlyIndexError:
        raise HTTPException(403, "this service is read-only (started with --read-only)") from None
    except DocumentExistsError as error:
        raise HTTPException(409, str(error)) from None
    except VerificationTooLongError as error:
        raise HTTPException(413, str(error)) from None
    except ValueError as error:
        raise HTTPException(422, str(error)) from None


async def _probe_arguments(index: NearDupIndex, probes: list) -> dict:
    """The ``texts`` or ``fingerprints`` keyword of :meth:`NearDupIndex.add_many` and
    :meth:`NearDupIndex.query_many` for parsed probes. A batch that mixes texts and
    fingerprints has its texts fingerprinted first (in the thread pool), so that
    it stays one call, and one transaction; a MinHash index refuses fingerprints itself
    (a ValueError, 422)."""
    texts = [p.text for p in probes]
    if all(t is not None for t in texts):
        return {"texts": texts}
    if all(t is None for t in texts) or index.method == "minhash":
        return {"fingerprints": [p.fingerprint for p in probes]}
    given = [t for t in texts if t is not None]
    fps = await run_in_threadpool(index.fingerprint, given)
    computed = iter(fps.tolist())
    return {
        "fingerprints": [
            next(computed) if t is not None else p.fingerprint for t, p in zip(texts, probes)
        ]
    }


def _checked_doc_id(doc_id: str) -> str:
    """A document ID from a URL path: 422 unless it has 1..1024 characters."""
    if not 1 <= len(doc_id) <= MAX_ID_LENGTH:
        raise HTTPException(422, f"id must have 1..{MAX_ID_LENGTH} characters")
    return doc_id


class _Routes:
    """The routes of one application: ``index`` behind ``token`` (None: no auth), batches of
    at most ``max_batch`` documents. :meth:`add_to` registers them; each endpoint is a method."""

    def __init__(self, index: NearDupIndex, token: str | None, max_batch: int) -> None:
        self.index = index
        self.expected = token.encode("utf-8") if token else None
        self.max_batch = max_batch
        self.secured = {"security": [{"HTTPBearer": []}]} if self.expected is not None else {}

    def authorize(self, request: Request) -> None:
        """401 unless the request carries the bearer token (when the service has one)."""
        # Checked inline rather than as a dependency: it is on every request's hot path.
        if self.expected is None:
            return
        header = request.headers.get("authorization", "")
        scheme, _, credentials = header.partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(
            credentials.strip().encode("utf-8"), self.expected
        ):
            raise HTTPException(
                401, "missing or wrong bearer token", headers={"WWW-Authenticate": "Bearer"}
            )

    def add_to(self, app: FastAPI) -> None:
        """Register the routes on ``app``, in the order the OpenAPI description lists them."""
        app.get("/healthz", tags=["service"], summary="Liveness")(self.healthz)
        app.router.add_api_route(
            "/v1/documents",
            self.add_documents,
            methods=["POST"],
            tags=["documents"],
            summary="Add one document or a batch",
            response_model=AddOut | AddBatchOut,
            responses={
                **_ERRORS,
                403: {"model": ErrorOut, "description": "Read-only service"},
                409: {"model": ErrorOut, "description": "ID already stored"},
            },
            openapi_extra={**_body_schema(AddOne, AddBatch), **self.secured},
            route_class_override=DirectRoute,
        )
        app.router.add_api_route(
            "/v1/query",
            self.query,
            methods=["POST"],
            tags=["documents"],
            summary="Probe without storing",
            response_model=QueryOut | QueryBatchOut,
            responses=_ERRORS,
            openapi_extra={**_body_schema(QueryOne, QueryBatch), **self.secured},
            route_class_override=DirectRoute,
        )
        unknown = {404: {"model": ErrorOut, "description": "Unknown ID"}}
        app.get(
            "/v1/documents/{doc_id:path}",
            tags=["documents"],
            summary="A stored record",
            response_model=RecordOut,
            openapi_extra=self.secured,
            responses={401: _ERRORS[401], **unknown},
        )(self.get_document)
        app.delete(
            "/v1/documents/{doc_id:path}",
            tags=["documents"],
            summary="Remove a document",
            openapi_extra=self.secured,
            responses={
                401: _ERRORS[401],
                403: {"model": ErrorOut, "description": "Read-only service"},
                **unknown,
            },
        )(self.delete_document)
        app.get(
            "/v1/stats",
            tags=["service"],
            summary="Index statistics",
            openapi_extra=self.secured,
            responses={401: _ERRORS[401]},
        )(self.stats)

    async def healthz(self):
        """Always answers (no token needed): the service is up and the index open."""
        index = self.index
        return json_response(
            {
                "status": "ok",
                "documents": len(index),
                "mode": "readonly" if index.readonly else "writer",
            }
        )

    async def add_documents(self, request: Request):
        """Add `{id, text | fingerprint, timestamp?}`, or `{"documents": [...]}` (in order, one
        transaction). Each result says whether the document is `new` or a `duplicate` of stored
        ones, and gives its group's `duplicate_id` and `original_id` and its nearest matches."""
        self.authorize(request)
        data = await read_json(request)
        if _check_batch(data, self.max_batch):
            batch = parse_body(AddBatch, data)
            docs, if_exists, limit = batch.documents, batch.if_exists, batch.limit
        else:
            one = parse_body(AddOne, data)
            docs, if_exists, limit = [one], one.if_exists, one.limit
        kwargs = await _probe_arguments(self.index, docs)
        results = await _write(
            self.index.add_many,
            [d.id for d in docs],
            timestamps=[d.timestamp for d in docs],
            if_exists=if_exists,
            limit=limit,
            **kwargs,
        )
        out = [r.to_dict() for r in results]
        return json_response({"results": out} if "documents" in data else out[0])

    async def query(self, request: Request):
        """Which stored documents are near-duplicates of a text or fingerprint: within k bits
        (SimHash index) or passing verification (MinHash index); nothing is stored.
        `duplicate_id` / `original_id` name the group the probe would join."""
        self.authorize(request)
        data = await read_json(request)
        if _check_batch(data, self.max_batch):
            batch = parse_body(QueryBatch, data)
            probes, k, limit, count_all = (
                batch.documents,
                batch.hamming_k,
                batch.limit,
                batch.count_all,
            )
        else:
            one = parse_body(QueryOne, data)
            probes, k, limit, count_all = [one], one.hamming_k, one.limit, one.count_all
        ids = [p.id for p in probes]
        try:
            # In the thread pool: verifying a long text takes long enough to hold up /healthz
            # and every other request if it ran on the event loop.
            kwargs = await _probe_arguments(self.index, probes)
            results = await run_in_threadpool(
                self.index.query_many,
                hamming_k=k,
                limit=limit,
                count_all=count_all,
                ids=None if any(i is None for i in ids) else ids,
                **kwargs,
            )
        except VerificationTooLongError as error:
            raise HTTPException(413, str(error)) from None
        except ValueError as error:
            raise HTTPException(422, str(error)) from None
        out = []
        for ident, r in zip(ids, results):
            d = r.to_dict()
            if ident is not None:
                d = {"id": ident, **{key: v for key, v in d.items() if key != "id"}}
            out.append(d)
        return json_response({"results": out} if "documents" in data else out[0])

    async def get_document(self, doc_id: str, request: Request):
        """The stored record: fingerprint, timestamp, position and group."""
        self.authorize(request)
        record = self.index.get(_checked_doc_id(doc_id))
        if record is None:
            raise HTTPException(404, f"no document with id {doc_id!r}")
        return json_response(record.to_dict())

    async def delete_document(self, doc_id: str, request: Request):
        """Remove a document; its group is re-checked (new original, or a split)."""
        self.authorize(request)
        if not await _write(self.index.remove, _checked_doc_id(doc_id)):
            raise HTTPException(404, f"no document with id {doc_id!r}")
        return json_response({"id": doc_id, "removed": True})

    async def stats(self, request: Request):
        """Documents, groups, settings (k, shingle, hash), table plan, memory, open time."""
        self.authorize(request)
        return json_response(await run_in_threadpool(self.index.stats))


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
