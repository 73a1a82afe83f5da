"""The gateway's HTTP core: the token, scopes per client, one JSON error shape."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from lore.channels.http.auth import Client, Clients, ensure_token, is_loopback, read_token
from lore.clock import FixedClock
from lore.config import Config, load_config
from lore.errors import ConfigError
from lore.llm.scripted import ScriptedProvider
from lore.runtime import build
from tests.gateway_server import Gateway, running_gateway

CLIENTS_TOML = """
[api.clients.webui]
token = "webui-token"
scopes = ["api:*"]

[api.clients.family]
token = "family-token"
scopes = ["line:group:family"]
"""


@pytest.fixture
def config(home: Path) -> Config:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(CLIENTS_TOML, encoding="utf-8")
    return load_config(
        env={"LORE_HOME": str(home), "USER": "john"},
        flags={"model": "scripted", "timezone": "Asia/Taipei", "extraction.enabled": False},
    )


@pytest.fixture
def gateway(config: Config, model: ScriptedProvider, clock: FixedClock) -> Iterator[Gateway]:
    lore = build(config, provider=model, clock=clock)
    with running_gateway(lore) as running:
        yield running
    lore.db.close()


def test_health_needs_no_token(gateway: Gateway) -> None:
    with gateway.client(token="") as http:
        reply = http.get("/health")
    assert reply.status_code == 200 and reply.json()["status"] == "ok"


@pytest.mark.parametrize("token", ["", "wrong-token"])
def test_every_other_endpoint_needs_a_valid_token(gateway: Gateway, token: str) -> None:
    with gateway.client(token=token) as http:
        for method, path in [
            ("GET", "/v1/models"),
            ("POST", "/v1/chat/completions"),
            ("GET", "/api/memories"),
            ("GET", "/api/reminders"),
            ("GET", "/api/sessions"),
            ("GET", "/api/scopes"),
            ("POST", "/mcp"),
        ]:
            reply = http.request(method, path, json={})
            assert reply.status_code == 401, (method, path)
            assert reply.json()["error"]["status"] == 401
            assert reply.headers["www-authenticate"] == "Bearer"


def test_a_client_token_reaches_only_its_scopes(gateway: Gateway) -> None:
    with gateway.client("webui-token") as http:
        assert http.get("/api/memories", params={"scope": "api:alice"}).status_code == 200
        refused = http.get("/api/memories", params={"scope": "cli:default"})
    assert refused.status_code == 403
    assert refused.json() == {
        "error": {"status": 403, "message": "this token may not use that conversation"}
    }


def test_a_forbidden_scope_reveals_nothing_about_whether_it_exists(gateway: Gateway) -> None:
    with gateway.client() as owner:
        owner.post("/api/memories", params={"scope": "cli:default"}, json={"content": "A secret"})
    with gateway.client("family-token") as family:
        existing = family.get("/api/memories", params={"scope": "cli:default"})
        missing = family.get("/api/memories", params={"scope": "cli:nobody"})
    assert existing.status_code == missing.status_code == 403
    assert existing.json() == missing.json()


def test_the_owner_token_reaches_every_scope(gateway: Gateway) -> None:
    with gateway.client() as http:
        for scope in ("cli:default", "line:group:family", "api:bob"):
            assert http.get("/api/memories", params={"scope": scope}).status_code == 200


def test_a_client_without_a_scope_gets_its_default(gateway: Gateway) -> None:
    with gateway.client("family-token") as http:
        reply = http.get("/api/memories")
        scopes = http.get("/api/scopes").json()
    assert reply.json()["scope"] == "line:group:family"
    assert scopes["default"] == "line:group:family"
    assert scopes["scopes"] == ["line:group:family"]


def test_unknown_paths_and_methods_are_json_errors(gateway: Gateway) -> None:
    with gateway.client() as http:
        missing = http.get("/api/nothing-here")
        wrong = http.patch("/api/memories")
    assert missing.status_code == 404
    assert missing.json()["error"]["message"] == "no such endpoint: GET /api/nothing-here"
    assert wrong.status_code == 405 and "PATCH" in wrong.json()["error"]["message"]


def test_malformed_json_is_one_clear_422(gateway: Gateway) -> None:
    with gateway.client() as http:
        reply = http.post(
            "/api/memories", content=b"{not json", headers={"content-type": "application/json"}
        )
    assert reply.status_code == 422
    assert reply.json()["error"]["message"] == "the request body is not valid JSON"


def test_openapi_docs_are_served_with_the_token(gateway: Gateway) -> None:
    with gateway.client() as http:
        docs = http.get("/docs")
        schema = http.get("/openapi.json").json()
    assert docs.status_code == 200 and "swagger" in docs.text.lower()
    assert "/api/memories/{memory_id}/history" in schema["paths"]
    assert "/v1/chat/completions" in schema["paths"]


def test_openapi_docs_need_the_token_like_every_endpoint_but_health(gateway: Gateway) -> None:
    """They list every route and its parameters: what the README says needs a token."""
    with gateway.client(token="") as http:
        paths = ["/docs", "/openapi.json", "/redoc", "/docs/oauth2-redirect"]
        statuses = {path: http.get(path).status_code for path in paths}
        assert http.get("/health").status_code == 200
    assert statuses == {
        "/docs": 401,
        "/openapi.json": 401,
        "/redoc": 404,
        "/docs/oauth2-redirect": 404,
    }


def test_the_token_file_is_created_once_and_private(config: Config) -> None:
    assert read_token(config) == ""
    token = ensure_token(config)
    assert len(token) >= 32
    assert ensure_token(config) == token
    mode = stat.S_IMODE(os.stat(config.api_token_path).st_mode)
    assert mode == 0o600


def test_a_configured_owner_token_wins_over_the_file(home: Path) -> None:
    config = load_config(env={"LORE_HOME": str(home)}, flags={"api.token": "from-config"})
    assert ensure_token(config) == "from-config"
    assert not config.api_token_path.exists()


def test_a_client_needs_a_token_and_scopes(home: Path) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text('[api.clients.x]\nscopes = ["api:*"]\n', encoding="utf-8")
    config = load_config(env={"LORE_HOME": str(home)})
    with pytest.raises(ConfigError, match="api.clients.x needs a token"):
        Clients("owner", config)


def test_scope_patterns_match_prefixes_and_exact_keys() -> None:
    client = Client("webui", ("api:*", "line:group:family"), "webui")
    assert client.may("api:alice") and client.may("line:group:family")
    assert not client.may("line:group:familyX") and not client.may("cli:default")


def test_loopback_addresses_are_recognised() -> None:
    assert all(is_loopback(h) for h in ("127.0.0.1", "localhost", "::1", "127.0.0.2"))
    assert not any(is_loopback(h) for h in ("0.0.0.0", "192.168.1.2", "::"))


def test_serve_refuses_a_public_address_before_a_token_exists(
    capsys: pytest.CaptureFixture[str], home: Path
) -> None:
    from lore.cli import main

    assert main(["serve", "--host", "0.0.0.0", "--port", "0"]) == 1
    assert "refusing to listen on 0.0.0.0" in capsys.readouterr().err


def test_show_token_prints_the_token_it_creates(
    capsys: pytest.CaptureFixture[str], home: Path
) -> None:
    from lore.cli import main

    assert main(["serve", "--show-token"]) == 0
    token = capsys.readouterr().out.strip()
    assert token and (home / "api_token").read_text().strip() == token
