"""Tests for neardup.index.service: the HTTP API over 127.0.0.1 (TestClient, and one real
uvicorn server on a free loopback port)."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import sys
import threading
import time
import warnings
from html.parser import HTMLParser

import pytest

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient

import httpx

from neardup.ids import MAX_ID_LENGTH
from neardup.index.service import create_app
from neardup.index.store import NearDupIndex

TOKEN = "s3cret-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
PAGE = "the quick brown fox jumps over the lazy dog near the river bank today"


@pytest.fixture
def index(tmp_path):
    with NearDupIndex.create(tmp_path / "idx", hamming_k=3, method="simhash") as idx:
        yield idx


@pytest.fixture
def client(index):
    return TestClient(create_app(index, max_batch=5, max_body_bytes=4096))


def test_add_query_get_delete(client, index):
    r = client.post("/v1/documents", json={"id": "a", "text": PAGE, "timestamp": "2024-01-02"})
    assert r.status_code == 200, r.text
    a = r.json()
    assert (a["status"], a["duplicate_id"], a["original_id"], a["matches"]) == ("new", "a", "a", [])
    assert len(a["fingerprint"]) == 16
    r = client.post(
        "/v1/documents",
        json={
            "documents": [
                {"id": "b", "text": PAGE + "!", "timestamp": 1704067200},  # 2024-01-01: older
                {
                    "id": "c",
                    "fingerprint": a["fingerprint"],
                    "timestamp": "2024-03-01T12:00:00+02:00",
                },
                {"id": "d", "text": "an unrelated page about gardening and tomatoes in summer"},
            ]
        },
    )
    assert r.status_code == 200, r.text
    b, c, d = r.json()["results"]
    assert (b["status"], b["duplicate_id"], b["is_original"]) == ("duplicate", "b", True)
    assert b["matches"] == [{"id": "a", "distance": 0, "duplicate_id": "b", "original_id": "b"}]
    assert c["status"] == "duplicate" and c["match_count"] == 2 and c["group_size"] == 3
    assert d["status"] == "new"
    r = client.post("/v1/query", json={"text": PAGE, "limit": 2})
    q = r.json()
    assert (q["status"], q["duplicate_id"], q["match_count"]) == ("duplicate", "b", 3)
    assert [m["id"] for m in q["matches"]] == ["a", "b"]
    r = client.post(
        "/v1/query",
        json={
            "documents": [
                {"id": "p1", "fingerprint": a["fingerprint"]},
                {"id": "p2", "text": "nothing similar stored"},
            ],
            "hamming_k": 0,
        },
    )
    assert [(x["id"], x["status"]) for x in r.json()["results"]] == [
        ("p1", "duplicate"),
        ("p2", "new"),
    ]
    assert len(index) == 4  # queries store nothing
    r = client.get("/v1/documents/a")
    assert r.status_code == 200 and r.json()["duplicate_id"] == "b"
    assert r.json()["timestamp"] == "2024-01-02T00:00:00Z"
    assert client.get("/v1/documents/zzz").status_code == 404
    assert client.delete("/v1/documents/b").json() == {"id": "b", "removed": True}
    assert client.get("/v1/documents/a").json()["duplicate_id"] == "a"  # next earliest
    assert client.delete("/v1/documents/b").status_code == 404
    stats = client.get("/v1/stats").json()
    assert (stats["documents"], stats["hamming_k"]) == (3, 3)
    assert client.get("/healthz").json()["status"] == "ok"


def test_ids_with_slashes(client):
    assert (
        client.post(
            "/v1/documents", json={"id": "https://x.org/a/b?c=1", "fingerprint": 5}
        ).status_code
        == 200
    )
    assert client.get("/v1/documents/https://x.org/a/b?c=1").status_code in (200, 404)
    r = client.get("/v1/documents/" + "https:%2F%2Fx.org%2Fa%2Fb%3Fc=1")
    assert r.status_code == 200 and r.json()["fingerprint"] == "0000000000000005"


@pytest.mark.parametrize(
    "body, status, message",
    [
        ({"id": "x"}, 422, "exactly one of 'text' and 'fingerprint'"),
        ({"id": "x", "text": "t", "fingerprint": "00"}, 422, "exactly one of"),
        ({"id": "", "text": "t"}, 422, "id: String should have at least 1 character"),
        ({"id": "x", "text": 5}, 422, "text"),
        ({"id": "x", "fingerprint": "not-hex"}, 422, "fingerprint must be 16 hex digits"),
        ({"id": "x", "text": "t", "timestamp": "yesterday"}, 422, "timestamp of 'x'"),
        ({"id": "x", "text": "t", "colour": "red"}, 422, "colour: Extra inputs are not permitted"),
        # a field named like FastAPI's root of body locations is still named
        ({"id": "x", "body": "t"}, 422, "body: Extra inputs are not permitted"),
        ({"id": "x", "text": "t", "limit": 5000}, 422, "limit"),
        ([1, 2], 422, "JSON object"),
        (
            {"documents": [{"id": "x", "text": "t"}, {"id": "x", "text": "u"}]},
            422,
            "'x' appears more than once",
        ),
        (
            {"documents": [{"id": "x", "text": "t"}, {"id": "y"}]},
            422,
            "documents[1]: give exactly one",
        ),
        (
            {"documents": [{"id": str(i), "text": "t"} for i in range(6)]},
            413,
            "at most 5 documents",
        ),
    ],
)
def test_invalid_requests_change_nothing(client, index, body, status, message):
    client.post("/v1/documents", json={"id": "keep", "text": "stored before"})
    r = client.post("/v1/documents", json=body)
    assert r.status_code == status, r.text
    assert message in r.json()["detail"]
    assert len(index) == 1


@pytest.mark.parametrize("url", ["/v1/documents", "/v1/query"])
def test_a_lone_surrogate_in_a_text_is_refused_as_the_command_line_refuses_it(client, index, url):
    # JSON can escape a surrogate that no UTF-8 text holds; the client library would not send it.
    body = b'{"id": "x", "text": "a \\ud800 b"}'
    r = client.post(url, content=body, headers={"Content-Type": "application/json"})
    assert r.status_code == 422
    assert "text: not valid Unicode: a lone surrogate at character 2" in r.json()["detail"]
    assert len(index) == 0


def test_malformed_json_and_conflicts(client, index):
    r = client.post(
        "/v1/documents", content=b"{not json", headers={"Content-Type": "application/json"}
    )
    assert r.status_code == 400 and "not valid JSON" in r.json()["detail"]
    assert client.post("/v1/documents", content=b"").status_code == 400
    client.post("/v1/documents", json={"id": "a", "fingerprint": 1})
    r = client.post(
        "/v1/documents",
        json={"documents": [{"id": "new", "fingerprint": 2}, {"id": "a", "fingerprint": 3}]},
    )
    assert r.status_code == 409 and "'a' is already in the index" in r.json()["detail"]
    assert len(index) == 1
    r = client.post(
        "/v1/documents",
        json={
            "documents": [{"id": "new", "fingerprint": 2}, {"id": "a", "fingerprint": 3}],
            "if_exists": "skip",
        },
    )
    assert [x["status"] for x in r.json()["results"]] == ["duplicate", "exists"]
    r = client.post("/v1/query", json={"fingerprint": 1, "hamming_k": 9})
    assert r.status_code == 422 and "hamming_k must be in 0..3, got 9" in r.json()["detail"]


def test_body_size_limit(client, index):
    big = {"id": "big", "text": "word " * 2000}
    r = client.post("/v1/documents", json=big)
    assert r.status_code == 413 and "at most 4096 bytes" in r.json()["detail"]

    def chunks():  # no Content-Length: counted while streaming
        yield b'{"id": "big", "text": "'
        for _ in range(100):
            yield b"x" * 100
        yield b'"}'

    r = client.post("/v1/documents", content=chunks(), headers={"Content-Type": "application/json"})
    assert r.status_code == 413
    assert len(index) == 0


def test_token_auth(index):
    client = TestClient(create_app(index, token=TOKEN))
    for method, url, body in [
        ("post", "/v1/documents", {"id": "a", "fingerprint": 1}),
        ("post", "/v1/query", {"fingerprint": 1}),
        ("get", "/v1/documents/a", None),
        ("delete", "/v1/documents/a", None),
        ("get", "/v1/stats", None),
    ]:
        kwargs = {"json": body} if body else {}
        r = client.request(method, url, **kwargs)
        assert r.status_code == 401 and r.headers["www-authenticate"] == "Bearer"
        r = client.request(method, url, headers={"Authorization": "Bearer wrong"}, **kwargs)
        assert r.status_code == 401
    assert len(index) == 0
    assert (
        client.post("/v1/documents", json={"id": "a", "fingerprint": 1}, headers=AUTH).status_code
        == 200
    )
    assert client.get("/v1/documents/a", headers=AUTH).status_code == 200
    assert client.get("/healthz").status_code == 200


def test_openapi_available(client):
    spec = client.get("/openapi.json").json()
    for path in ("/v1/documents", "/v1/query", "/v1/documents/{doc_id}", "/v1/stats", "/healthz"):
        assert path in spec["paths"], path
    schemas = spec["components"]["schemas"]
    assert {
        "AddOne",
        "AddBatch",
        "QueryOne",
        "QueryBatch",
        "DocumentIn",
        "AddOut",
        "RecordOut",
    } <= set(schemas)
    body = spec["paths"]["/v1/documents"]["post"]["requestBody"]["content"]["application/json"]
    assert {"$ref": "#/components/schemas/AddBatch"} in body["schema"]["oneOf"]
    assert "HTTPBearer" in spec["components"]["securitySchemes"]
    assert client.get("/docs").status_code == 200


def test_response_models_are_derived_from_the_results(index, tmp_path):
    """The OpenAPI response models are the JSON form of neardup.index.results: every answer the
    service sends, SimHash or MinHash, has the keys its model lists and fits its types."""
    from neardup.index import service
    from neardup.index.results import Match

    def fits(model, answer: dict) -> None:
        fields = model.model_fields
        assert set(answer) <= set(fields), (model.__name__, answer)
        assert {k for k, f in fields.items() if f.is_required()} <= set(answer), answer
        model.model_validate(answer)

    answers = [r.to_dict() for r in index.add_many(["a", "b"], [PAGE, PAGE + "!"])]
    with NearDupIndex.create(tmp_path / "mh", method="minhash") as minhash:
        answers += [r.to_dict() for r in minhash.add_many(["a", "b"], [PAGE, PAGE + "!"])]
        queries = [r.to_dict() for r in minhash.query_many([PAGE], ids=["q"])]
    queries += [r.to_dict() for r in index.query_many([PAGE, "nothing like it"])]
    for answer in answers:
        fits(service.AddOut, answer)
    for answer in queries:
        fits(service.QueryOut, answer)
    fits(service.RecordOut, index.get("b").to_dict())
    assert {"distance", "similarity"} <= set(service.MatchOut.model_fields)
    fits(service.MatchOut, Match("a", None, "a", "a", 0.9).to_dict())
    assert any(a["matches"] and "similarity" in a["matches"][0] for a in answers)


def test_read_only_service(index, tmp_path):
    index.add("a", fingerprint=1)
    with NearDupIndex(index.path, readonly=True) as reader:
        client = TestClient(create_app(reader))
        r = client.post("/v1/documents", json={"id": "b", "fingerprint": 2})
        assert r.status_code == 403
        assert client.delete("/v1/documents/a").status_code == 403
        index.add("c", fingerprint=3)  # the writer commits: the reader sees it on its next query
        assert (
            client.post("/v1/query", json={"fingerprint": 3, "hamming_k": 0}).json()["matches"][0][
                "id"
            ]
            == "c"
        )


def test_app_options_are_validated(index):
    with pytest.raises(ValueError, match="max_batch must be in 1..100000, got 0"):
        create_app(index, max_batch=0)
    with pytest.raises(ValueError, match="max_body_bytes must be in 1024"):
        create_app(index, max_body_bytes=10)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_real_server_on_loopback(index):
    import uvicorn

    port = _free_port()
    app = create_app(index, token=TOKEN)
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="error"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 20
        while not server.started and time.monotonic() < deadline:
            time.sleep(0.02)
        assert server.started
        base = f"http://127.0.0.1:{port}"
        with httpx.Client(base_url=base, timeout=10) as http:
            assert http.get("/healthz").json()["status"] == "ok"
            assert http.post("/v1/documents", json={"id": "a", "text": PAGE}).status_code == 401
            r = http.post("/v1/documents", json={"id": "a", "text": PAGE}, headers=AUTH)
            assert r.status_code == 200 and r.json()["status"] == "new"
            r = http.post(
                "/v1/documents",
                headers=AUTH,
                content=json.dumps({"id": "b", "text": PAGE.upper()}).encode(),
            )
            assert r.json()["status"] == "duplicate" and r.json()["duplicate_id"] == "a"
            r = http.post("/v1/query", json={"text": PAGE}, headers=AUTH)
            assert r.json()["match_count"] == 2
            r = http.post(
                "/v1/documents",
                headers={**AUTH, "Content-Type": "application/json"},
                content=b"x" * (9 * 1024 * 1024),
            )
            assert r.status_code == 413
            assert http.get("/openapi.json").status_code == 200
    finally:
        server.should_exit = True
        thread.join(20)
    assert not thread.is_alive()


def test_serve_without_the_service_extra_says_how_to_install_it(tmp_path, monkeypatch):
    import sys

    from click.testing import CliRunner

    from neardup.cli import main

    monkeypatch.delitem(sys.modules, "neardup.index.service", raising=False)
    monkeypatch.setitem(sys.modules, "fastapi", None)  # import fastapi now raises ImportError
    result = CliRunner().invoke(main, ["serve", "-d", str(tmp_path / "idx")])
    assert result.exit_code == 1
    assert "pip install 'neardup[service]'" in result.output


# ------------------------------------------------------------------------------------------
# /docs offline, and the service's edges


class _PageRefs(HTMLParser):
    """The URLs an HTML page references: ``src`` and ``href`` of every tag, by tag name."""

    def __init__(self) -> None:
        super().__init__()
        self.refs: list[tuple[str, str]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.refs += [(tag, value) for name, value in attrs if name in ("src", "href") and value]


def _refs(html: str) -> list[tuple[str, str]]:
    parser = _PageRefs()
    parser.feed(html)
    parser.close()
    return parser.refs


def _is_external(url: str) -> bool:
    # Protocol-relative ("//host/x.js") counts: the browser fetches it from that host.
    return "://" in url or url.startswith("//")


def test_docs_page_loads_nothing_from_the_internet(index):
    # With a token: /docs, its files and /openapi.json still need none, as FastAPI's own did.
    from neardup.index.service_http import swagger_ui_files

    assert swagger_ui_files() is not None, "fastapi-offline missing: pip install -e '.[service]'"
    client = TestClient(create_app(index, token=TOKEN))
    page = client.get("/docs")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    refs = _refs(page.text)
    external = [url for _, url in refs if _is_external(url)]
    assert not external, external
    assert "http://" not in page.text and "https://" not in page.text  # nor in the inline script
    scripts = [url for tag, url in refs if tag == "script"]
    styles = [url for tag, url in refs if tag == "link" and url.endswith(".css")]
    assert scripts and styles, refs
    for _, url in refs:
        asset = client.get(url)
        assert asset.status_code == 200 and len(asset.content) > 100, url
    bundle = client.get(next(u for u in scripts if u.endswith("swagger-ui-bundle.js"))).text
    # FastAPI writes OpenAPI 3.1, which Swagger UI reads from version 5 on; 4.x loads offline
    # but shows only "Unable to render this definition".
    assert client.get("/openapi.json").json()["openapi"].startswith("3.1")
    version = re.search(r'PACKAGE_VERSION:"(\d+)\.', bundle)
    assert version and int(version.group(1)) >= 5, version
    spec_url = re.search(r"url: '([^']+)'", page.text).group(1)
    assert spec_url == "/openapi.json" and client.get(spec_url).status_code == 200
    # The mounted folder serves its files only (an encoded ../ reaches the package's code).
    assert client.get("/docs/static/%2e%2e/core.py").status_code == 404


def test_docs_page_urls_follow_the_root_path(index):
    client = TestClient(create_app(index), root_path="/nd")
    page = client.get("/nd/docs")
    urls = [url for _, url in _refs(page.text)]
    assert urls and all(url.startswith("/nd/docs/static/") for url in urls), urls
    assert "url: '/nd/openapi.json'" in page.text
    assert all(client.get(url).status_code == 200 for url in urls)


def test_docs_page_without_the_swagger_files_says_what_to_install(index, monkeypatch):
    monkeypatch.setitem(sys.modules, "fastapi_offline", None)  # import fastapi_offline fails
    client = TestClient(create_app(index, token=TOKEN))
    page = client.get("/docs")
    assert page.status_code == 200 and "pip install 'neardup[service]'" in page.text
    assert "://" not in page.text and "<script" not in page.text
    assert _refs(page.text) == [("a", "/openapi.json")]
    assert client.get("/openapi.json").status_code == 200
    assert client.get("/docs/static/swagger-ui.css").status_code == 404  # nothing mounted


CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"


@pytest.mark.browser
@pytest.mark.skipif(
    not (os.path.exists(CHROMIUM) and os.path.exists(CHROMEDRIVER)),
    reason="needs Debian's chromium and chromium-driver",
)
def test_docs_page_renders_offline_in_chromium(index, tmp_path):
    """The operations are drawn by a real browser that can resolve no host name: what the
    HTML checks above cannot see (a Swagger UI too old for the spec draws an error)."""
    import uvicorn

    webdriver = pytest.importorskip("selenium.webdriver")
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    port = _free_port()
    app = create_app(index, token=TOKEN)
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="error"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    # No host resolves but the server's address, so anything the page wanted from the internet
    # would fail (the rules apply to IP literals too, hence the exclusion).
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-dev-shm-usage",
        "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1",
        f"--user-data-dir={tmp_path}",
    ):
        options.add_argument(flag)
    driver = None
    try:
        deadline = time.monotonic() + 20
        while not server.started and time.monotonic() < deadline:
            time.sleep(0.02)
        assert server.started
        driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
        driver.set_page_load_timeout(30)
        driver.get(f"http://127.0.0.1:{port}/docs")
        WebDriverWait(driver, 30).until(
            lambda d: (
                d.find_elements(By.CSS_SELECTOR, ".opblock")
                or "Unable to render" in d.find_element(By.ID, "swagger-ui").text
            )
        )
        shown = driver.find_element(By.ID, "swagger-ui").text
        assert "Unable to render" not in shown, shown[:300]
        paths = {e.text for e in driver.find_elements(By.CSS_SELECTOR, ".opblock-summary-path")}
        assert {"/v1/documents", "/v1/query", "/v1/stats", "/healthz"} <= paths, paths
    finally:
        if driver is not None:
            driver.quit()
        server.should_exit = True
        thread.join(20)
    assert not thread.is_alive()


@pytest.mark.parametrize("path", ["/v1/query", "/v1/documents"])
@pytest.mark.parametrize(
    "body", [b"[" * 100_000, b"[" * 100_000 + b"]" * 100_000], ids=["unclosed", "valid-json"]
)
def test_deeply_nested_json_is_a_client_error(index, path, body):
    # A body limit above the 200 kB body, so that the parser, not the size check, answers.
    client = TestClient(create_app(index, max_body_bytes=1 << 20))
    r = client.post(path, content=body, headers={"content-type": "application/json"})
    assert r.status_code == 400, r.text
    assert "nested too deeply" in r.json()["detail"]
    assert len(index) == 0
    # The service is still fine afterwards.
    assert client.post("/v1/documents", json={"id": "a", "text": PAGE}).json()["status"] == "new"
    assert client.post("/v1/query", json={"text": PAGE}).json()["duplicate_id"] == "a"


_CONTROL = "must not contain control characters"


@pytest.mark.parametrize(
    ("ident", "rule"),
    [
        ("a\nb", _CONTROL),
        ("tab\there", _CONTROL),
        ("cr\r", _CONTROL),
        ("nul\x00", _CONTROL),
        ("del\x7f", _CONTROL),
        ("c1\x85", _CONTROL),
        ("para\u2029graph", _CONTROL),
        ("", "at least 1 character"),
        ("x" * (MAX_ID_LENGTH + 1), f"at most {MAX_ID_LENGTH} characters"),
    ],
)
def test_ids_the_rules_refuse_are_client_errors(client, index, ident, rule):
    r = client.post("/v1/documents", json={"id": ident, "text": PAGE})
    assert r.status_code == 422, r.text
    detail = r.json()["detail"]
    assert detail.startswith("id: ") and rule in detail, detail
    assert len(index) == 0
    # In a batch: the whole batch is refused, the ID named by its place.
    r = client.post(
        "/v1/documents",
        json={"documents": [{"id": "fine", "text": PAGE}, {"id": ident, "fingerprint": 1}]},
    )
    assert r.status_code == 422 and r.json()["detail"].startswith("documents[1].id: "), r.text
    assert rule in r.json()["detail"]
    assert len(index) == 0


def test_id_with_a_lone_surrogate_is_a_client_error(client, index):
    # Valid JSON ("\ud800" escape) that decodes to a str UTF-8 cannot encode; pydantic's
    # strict str refuses it before neardup.ids' own rule would.
    body = b'{"id": "a\\ud800", "text": "%s"}' % PAGE.encode()
    r = client.post("/v1/documents", content=body, headers={"content-type": "application/json"})
    detail = r.json()["detail"]
    assert r.status_code == 422 and detail.startswith("id: ") and "unicode" in detail, r.text
    assert len(index) == 0


@pytest.fixture
def fake_serve(monkeypatch):
    """Replaces the service's serve(): the CLI's checks run, no index is opened and no server
    starts. The keyword arguments of each call are appended to the returned list."""
    from neardup.index import service

    calls: list[dict] = []
    monkeypatch.setattr(service, "serve", lambda path, **kwargs: calls.append(kwargs))
    monkeypatch.delenv("NEARDUP_TOKEN", raising=False)
    monkeypatch.delenv("NEARDUP_TOKEN_FILE", raising=False)
    return calls


def _serve_cli(*args: str, env: dict | None = None):
    from click.testing import CliRunner

    from neardup.cli import main

    return CliRunner(env=env).invoke(main, ["serve", *args])


def test_read_token_file(tmp_path):
    from neardup.cli.serve import _read_token_file

    secret = tmp_path / "token"
    secret.write_text("  s3cret \t\r\nsecond line ignored\n")
    assert _read_token_file(str(secret)) == "s3cret"
    for content in ("", "\n", "  \nlater line\n"):
        empty = tmp_path / "empty-token"
        empty.write_text(content)
        with pytest.raises(ValueError, match=re.escape(str(empty)) + ".*empty"):
            _read_token_file(str(empty))


def test_serve_token_sources(tmp_path, fake_serve):
    secret = tmp_path / "token"
    secret.write_text("from-file\n")
    idx = str(tmp_path / "idx")

    assert _serve_cli("-d", idx, "--token", "given").exit_code == 0
    assert _serve_cli("-d", idx, "--token-file", str(secret)).exit_code == 0
    assert _serve_cli("-d", idx, env={"NEARDUP_TOKEN": "from-env"}).exit_code == 0
    assert _serve_cli("-d", idx, env={"NEARDUP_TOKEN_FILE": str(secret)}).exit_code == 0
    assert _serve_cli("-d", idx).exit_code == 0
    assert [c["token"] for c in fake_serve] == ["given", "from-file", "from-env", "from-file", None]

    # Two sources are refused before anything starts, also when one is NEARDUP_TOKEN.
    del fake_serve[:]
    for args, env in [
        (["--token", "a", "--token-file", str(secret)], None),
        (["--token-file", str(secret)], {"NEARDUP_TOKEN": "from-env"}),
    ]:
        result = _serve_cli("-d", idx, *args, env=env)
        assert result.exit_code == 1
        assert "give one of --token (or NEARDUP_TOKEN) and --token-file" in result.stderr
    # A token file whose first line is empty is an error naming the file.
    (tmp_path / "blank").write_text("\nsecret on line 2\n")
    result = _serve_cli("-d", idx, "--token-file", str(tmp_path / "blank"))
    assert result.exit_code == 1 and str(tmp_path / "blank") in result.stderr
    assert fake_serve == []


def test_serve_on_a_missing_index_fails_before_announcing(tmp_path, monkeypatch):
    import uvicorn

    started: list[int] = []
    # Should the index open after all, no real server runs: Server.run returns at once.
    monkeypatch.setattr(uvicorn.Server, "run", lambda self, *a, **k: started.append(1))
    monkeypatch.delenv("NEARDUP_TOKEN", raising=False)
    monkeypatch.delenv("NEARDUP_TOKEN_FILE", raising=False)
    missing = tmp_path / "missing.idx"
    result = _serve_cli("-d", str(missing), "--port", "0")
    assert result.exit_code == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("neardup: error: no index at"), result.stderr
    assert str(missing) in lines[0]
    assert "serving" not in result.output and not started
    # The same command on an existing index announces itself (so the check above can fail).
    NearDupIndex.create(tmp_path / "there.idx", method="simhash").close()
    result = _serve_cli("-d", str(tmp_path / "there.idx"), "--port", "0")
    assert result.exit_code == 0, result.output
    assert "serving" in result.stderr and started == [1]


def test_minhash_index_answers_with_similarity(tmp_path):
    with NearDupIndex.create(tmp_path / "mh", method="minhash") as idx:
        client = TestClient(create_app(idx, max_batch=5))
        r = client.post("/v1/documents", json={"id": "a", "text": PAGE, "timestamp": 100})
        assert r.status_code == 200 and r.json()["status"] == "new"
        edited = PAGE.replace("lazy", "sleepy")
        r = client.post(
            "/v1/documents",
            json={
                "documents": [
                    {"id": "old", "text": edited, "timestamp": 50},
                    {
                        "id": "other",
                        "text": "a page about something else entirely, with numbers 1 2 3",
                    },
                ]
            },
        )
        assert r.status_code == 200, r.text
        old, other = r.json()["results"]
        assert (old["status"], old["is_original"], other["status"]) == ("duplicate", True, "new")
        match = old["matches"][0]
        assert set(match) == {"id", "similarity", "duplicate_id", "original_id"}
        assert match["id"] == "a" and 0.8 <= match["similarity"] < 1
        r = client.post("/v1/query", json={"text": PAGE})
        assert r.status_code == 200
        q = r.json()
        assert (q["duplicate_id"], q["match_count"]) == ("old", 2)
        assert q["matches"][0] == {
            "id": "a",
            "similarity": 1.0,
            "duplicate_id": "old",
            "original_id": "old",
        }
        r = client.post(
            "/v1/query",
            json={"documents": [{"text": PAGE, "id": "p"}, {"text": "nothing alike", "id": "q"}]},
        )
        assert [x["status"] for x in r.json()["results"]] == ["duplicate", "new"]
        # A MinHash index takes texts: fingerprints and hamming_k are refused, nothing stored.
        r = client.post("/v1/query", json={"fingerprint": "00000000000000ff"})
        assert r.status_code == 422 and "probe it with texts" in r.json()["detail"]
        r = client.post("/v1/query", json={"text": PAGE, "hamming_k": 2})
        assert r.status_code == 422 and "hamming_k applies to SimHash" in r.json()["detail"]
        r = client.post(
            "/v1/documents",
            json={
                "documents": [
                    {"id": "x", "text": PAGE},
                    {"id": "y", "fingerprint": "00000000000000ff"},
                ]
            },
        )
        assert r.status_code == 422 and len(idx) == 3
        stats = client.get("/v1/stats").json()
        assert (stats["method"], stats["bands"], stats["verify"]) == ("minhash", 32, "lcs:0.8")
        assert client.delete("/v1/documents/old").status_code == 200
        assert client.get("/v1/documents/a").json()["duplicate_id"] == "a"


def test_a_query_works_off_the_event_loop(index, monkeypatch):
    """/healthz answers while a /v1/query is still computing: the query's CPU work runs in the
    thread pool, not on the event loop that serves every request."""
    import asyncio

    computing = threading.Event()
    healthy = threading.Event()
    released = []
    query_many = index.query_many

    def slow_query_many(*args, **kwargs):
        computing.set()
        # On the event loop, /healthz cannot answer (and set the event) before this times out.
        released.append(healthy.wait(5))
        return query_many(*args, **kwargs)

    monkeypatch.setattr(index, "query_many", slow_query_many)
    app = create_app(index, max_batch=5)

    async def scenario():
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as http:
            query = asyncio.create_task(http.post("/v1/query", json={"text": PAGE}))
            while not computing.is_set():
                await asyncio.sleep(0.01)
            health = await http.get("/healthz")
            healthy.set()
            return health.status_code, (await query).status_code

    assert asyncio.run(scenario()) == (200, 200)
    assert released == [True]


@pytest.mark.parametrize(
    "body, status, message",
    [
        ({"id": "t", "text": PAGE, "timestamp": True}, 422, "timestamp"),
        ({"id": "t", "text": PAGE, "limit": "5"}, 422, "limit"),
        ({"id": "t", "text": PAGE, "limit": True}, 422, "limit"),
        ({"id": "t", "text": PAGE, "limit": 2.0}, 422, "limit"),
        ({"text": PAGE, "count_all": "yes"}, 422, "count_all"),
        ('{"id": "t", "text": "a", "timestamp": 1' + "0" * 5000 + "}", 400, "not valid JSON"),
    ],
)
def test_values_of_the_wrong_type_are_client_errors(index, body, status, message):
    """No coercion: true is not 1 s, "5" is not 5; a JSON integer too long for Python to
    convert is malformed JSON (400), not a server error."""
    client = TestClient(create_app(index, max_batch=5))
    for path in ("/v1/documents", "/v1/query"):
        if isinstance(body, str):
            r = client.post(path, content=body, headers={"content-type": "application/json"})
        else:
            r = client.post(path, json=body)
        if path == "/v1/query" and isinstance(body, dict) and "id" in body and "limit" not in body:
            continue  # a query has no timestamp
        assert r.status_code == status, (path, r.text)
        assert message in r.json()["detail"], (path, r.text)
    assert len(index) == 0


def test_a_request_whose_verification_would_take_too_long_is_refused(tmp_path):
    """A MinHash service bounds the LCS work of a request: a long text whose verification
    would exceed it is refused with 413 and nothing is stored; a near copy that differs in one
    place costs almost nothing (common prefix and suffix) and is answered."""
    import random

    rng = random.Random(3)
    words = [rng.choice([f"w{i}" for i in range(2000)]) for _ in range(5000)]
    spread = [w if i % 100 else "edited" for i, w in enumerate(words)]
    near = words[:2500] + ["edited"] + words[2501:]
    with NearDupIndex.create(tmp_path / "mh", method="minhash") as idx:
        idx.add("long", " ".join(words))
        client = TestClient(create_app(idx, max_verify_work=100_000))
        r = client.post("/v1/query", json={"text": " ".join(near)})
        assert r.status_code == 200 and r.json()["matches"][0]["id"] == "long", r.text
        for path, body in (
            ("/v1/query", {"text": " ".join(spread)}),
            ("/v1/documents", {"id": "spread", "text": " ".join(spread)}),
        ):
            r = client.post(path, json=body)
            assert r.status_code == 413, (path, r.text)
            assert "100,000 word operations" in r.json()["detail"]
        assert len(idx) == 1
        unlimited = TestClient(create_app(idx, max_verify_work=None))
        r = unlimited.post("/v1/query", json={"text": " ".join(spread)})
        assert r.status_code == 200 and r.json()["matches"][0]["similarity"] == 4950 / 5000


def test_openapi_describes_the_index_it_serves(tmp_path, client):
    simhash = client.get("/openapi.json").json()["info"]["description"]
    assert "SimHash fingerprints within 3 bits" in simhash and "--method simhash" in simhash
    with NearDupIndex.create(tmp_path / "mh", method="minhash") as index:
        text = TestClient(create_app(index)).get("/openapi.json").json()["info"]["description"]
    assert "LCS resemblance at least 0.8, verified on the texts" in text
    assert "--method minhash" in text and "SimHash" not in text
