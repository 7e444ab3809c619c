"""Tests for neardup.index.service: the HTTP API over 127.0.0.1 (TestClient, and one real
uvicorn server on a free loopback port)."""

from __future__ import annotations

import json
import socket
import threading
import time
import warnings

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
    with NearDupIndex.create(tmp_path / "idx", hamming_k=3) as idx:
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


def _page_urls(html: str) -> list[str]:
    import re

    return re.findall(r'(?:src|href)="([^"]+)"', html) + re.findall(r"url: '([^']+)'", html)


def test_docs_page_loads_nothing_from_the_internet(index):
    client = TestClient(create_app(index, token=TOKEN))
    page = client.get("/docs")
    assert page.status_code == 200 and "swagger-ui-bundle.js" in page.text
    urls = _page_urls(page.text)
    assert urls and not [u for u in urls if "://" in u or u.startswith("//")], urls
    for url in urls:
        asset = client.get(url)
        assert asset.status_code == 200 and len(asset.content) > 100, url


def test_docs_page_without_the_swagger_files_says_what_to_install(index, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "swagger_ui_bundle", None)  # import fails
    page = TestClient(create_app(index)).get("/docs")
    assert page.status_code == 200 and "neardup[service]" in page.text
    assert _page_urls(page.text) == ["/openapi.json"]


@pytest.mark.parametrize("path", ["/v1/query", "/v1/documents"])
def test_deeply_nested_json_is_a_client_error(client, path):
    r = client.post(path, content=b"[" * 3000, headers={"content-type": "application/json"})
    assert r.status_code == 400 and "nested too deeply" in r.json()["detail"]
    ok = client.post("/v1/query", json={"text": PAGE})
    assert ok.status_code == 200


@pytest.mark.parametrize("ident", ["a\nb", "tab\there", "", "x" * (MAX_ID_LENGTH + 1)])
def test_ids_the_rules_refuse_are_client_errors(client, ident):
    r = client.post("/v1/documents", json={"id": ident, "text": PAGE})
    assert r.status_code in (400, 422), r.text
    assert "id" in r.text


def test_serve_token_sources_and_missing_index(tmp_path, monkeypatch):
    from click.testing import CliRunner

    from neardup.cli import main
    from neardup.commands.index import _read_token_file

    secret = tmp_path / "token"
    secret.write_text("  s3cret  \nignored\n")
    assert _read_token_file(str(secret)) == "s3cret"
    (tmp_path / "empty").write_text("\n")
    with pytest.raises(ValueError, match="empty"):
        _read_token_file(str(tmp_path / "empty"))
    runner = CliRunner()
    both = runner.invoke(main, ["serve", "-d", str(tmp_path / "idx"), "--token", "a",
                                "--token-file", str(secret)])
    assert both.exit_code == 1 and "one of --token" in both.output
    monkeypatch.setenv("NEARDUP_TOKEN", "from-env")
    env = runner.invoke(main, ["serve", "-d", str(tmp_path / "idx"), "--token-file", str(secret)])
    assert env.exit_code == 1 and "one of --token" in env.output  # the variable counts as --token
    monkeypatch.delenv("NEARDUP_TOKEN")
    missing = runner.invoke(main, ["serve", "-d", str(tmp_path / "missing.idx")])
    assert missing.exit_code == 1 and "no index at" in missing.output
    assert "serving" not in missing.output
