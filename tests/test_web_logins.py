"""Logging in to the web page: a server-side log-in behind the cookie (never the token),
CSRF checks on everything the page changes, and the security headers of every page."""

from __future__ import annotations

import json
import os
import re
import stat
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import httpx
import pytest

from lore.clock import FixedClock
from lore.config import ApiClientConfig, Config, load_config
from lore.errors import ConfigError
from lore.llm.scripted import ScriptedProvider
from lore.runtime import Runtime, build
from tests.gateway_server import CSRF_HEADER, Gateway, page_csrf, running_gateway

SCOPE = "api:default"
GUEST = "guest-token-for-tests"
COOKIE = "lore_login"
TEMPLATES = Path(__file__).parents[1] / "src/lore/channels/http/templates"
STATIC = TEMPLATES.parent / "static"


def _settings(config: Config, trusted_proxies: tuple[str, ...] = ()) -> Config:
    guest = ApiClientConfig(token=GUEST, scopes=("api:*",))
    api = replace(config.api, clients={"webui": guest}, trusted_proxies=trusted_proxies)
    return replace(config, api=api)


@pytest.fixture
def lore(config: Config, model: ScriptedProvider, clock: FixedClock) -> Iterator[Runtime]:
    runtime = build(_settings(config), provider=model, clock=clock)
    yield runtime
    runtime.db.close()


@pytest.fixture
def gateway(lore: Runtime) -> Iterator[Gateway]:
    with running_gateway(lore) as running:
        yield running


def _log_in(gateway: Gateway, headers: dict[str, str] | None = None) -> httpx.Response:
    with httpx.Client(base_url=gateway.url, timeout=30) as http:
        return http.post("/login", data={"token": gateway.token}, headers=headers or {})


def _contents(lore: Runtime) -> list[str]:
    return [
        m.content for m in lore.memory.active_page(SCOPE, now=lore.clock.now(), limit=-1).memories
    ]


# -- the cookie --------------------------------------------------------------------------


def test_the_login_cookie_is_a_random_log_in_id_never_the_token(gateway: Gateway) -> None:
    first, second = _log_in(gateway), _log_in(gateway)
    cookie = first.headers["set-cookie"]
    value = first.cookies[COOKIE]
    assert first.status_code == 303
    assert gateway.token not in cookie and gateway.token not in value
    assert len(value) >= 32 and value != second.cookies[COOKIE]
    flags = {part.strip().lower().split("=")[0] for part in cookie.split(";")}
    assert {"httponly", "path", "max-age"} <= flags
    assert "samesite=strict" in cookie.lower()
    assert "secure" not in flags  # plain HTTP on loopback: a Secure cookie would never return


def test_the_log_ins_file_holds_neither_the_cookie_nor_the_token_and_is_private(
    gateway: Gateway, lore: Runtime
) -> None:
    value = _log_in(gateway).cookies[COOKIE]
    path = lore.config.home / "web_logins.json"
    stored = path.read_text(encoding="utf-8")
    assert value not in stored and gateway.token not in stored
    assert len(json.loads(stored)["logins"]) == 1
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600


def test_the_token_itself_as_a_cookie_no_longer_logs_anyone_in(gateway: Gateway) -> None:
    for name in ("lore_token", COOKIE):
        with httpx.Client(base_url=gateway.url, cookies={name: gateway.token}) as http:
            page = http.get("/")
            listed = http.get("/ui/memories")
        assert "Log in" in page.text and "csrf-token" not in page.text
        assert listed.status_code == 401


@pytest.mark.parametrize(
    ("trusted", "proto", "secure"),
    [(("127.0.0.1",), "https", True), ((), "https", False), (("127.0.0.0/8",), "http", False)],
)
def test_the_cookie_is_secure_over_https_through_a_trusted_proxy_only(
    config: Config,
    model: ScriptedProvider,
    clock: FixedClock,
    trusted: tuple[str, ...],
    proto: str,
    secure: bool,
) -> None:
    lore = build(_settings(config, trusted_proxies=trusted), provider=model, clock=clock)
    with running_gateway(lore) as gateway:
        answer = _log_in(gateway, {"X-Forwarded-Proto": proto})
    lore.db.close()
    flags = [part.strip().lower() for part in answer.headers["set-cookie"].split(";")]
    assert ("secure" in flags) is secure


def test_a_trusted_proxy_that_is_not_an_address_is_one_clear_line(home: Path) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text('[api]\ntrusted_proxies = ["nginx"]\n', encoding="utf-8")
    with pytest.raises(ConfigError, match="api.trusted_proxies.*'nginx'"):
        load_config(env={"LORE_HOME": str(home), "USER": "john"}, flags={"model": "scripted"})


# -- how long a log-in lasts ------------------------------------------------------------


def test_a_log_in_ends_when_it_expires(gateway: Gateway, clock: FixedClock) -> None:
    with gateway.page() as page:
        assert page.get("/ui/memories").status_code == 200
        clock.advance(days=gateway.lore.config.api.login_days, seconds=1)
        home = page.get("/")
        listed = page.get("/ui/memories")
        added = page.post("/ui/memories", params={"scope": SCOPE}, data={"content": "过期了"})
    assert "Log in" in home.text
    assert listed.status_code == 401 and added.status_code == 401
    assert _contents(gateway.lore) == []


def test_a_log_in_outlives_a_restart_of_the_server(lore: Runtime) -> None:
    with running_gateway(lore) as gateway:
        page = gateway.page()
    with running_gateway(lore) as restarted:
        page.base_url = httpx.URL(restarted.url)
        with page:
            added = page.post("/ui/memories", params={"scope": SCOPE}, data={"content": "Маша"})
    assert added.status_code == 200 and _contents(lore) == ["Маша"]


def test_a_new_token_for_a_client_ends_its_log_ins(
    config: Config, model: ScriptedProvider, clock: FixedClock
) -> None:
    lore = build(_settings(config), provider=model, clock=clock)
    with running_gateway(lore) as gateway:
        guest = gateway.page(GUEST)
    lore.db.close()
    rotated = ApiClientConfig(token="a-new-guest-token", scopes=("api:*",))
    settings = replace(config, api=replace(config.api, clients={"webui": rotated}))
    lore = build(settings, provider=model, clock=clock)
    with running_gateway(lore) as restarted, guest:
        guest.base_url = httpx.URL(restarted.url)
        listed = guest.get("/ui/memories")
    lore.db.close()
    assert listed.status_code == 401
    assert (
        listed.json()["error"]["message"] == "that log-in's token is no longer valid: log in again"
    )


def test_log_out_ends_that_log_in_even_for_a_copied_cookie(gateway: Gateway) -> None:
    with gateway.page() as page, gateway.page() as other:
        value = page.cookies[COOKIE]
        csrf = page.headers[CSRF_HEADER]
        assert page.post("/logout", data={"csrf_token": csrf}).status_code == 303
        with httpx.Client(base_url=gateway.url, cookies={COOKIE: value}) as copy:
            assert copy.get("/ui/memories").status_code == 401
        assert other.get("/ui/memories").status_code == 200  # another log-in is untouched


def test_logout_all_ends_every_log_in_while_the_server_runs(
    gateway: Gateway, capsys: pytest.CaptureFixture[str]
) -> None:
    from lore.cli import main

    with gateway.page() as page, gateway.page(GUEST) as guest:
        assert page.get("/ui/memories").status_code == 200
        assert main(["serve", "--logout-all"]) == 0
        assert capsys.readouterr().out == "lore serve: logged out 2 web page log-ins\n"
        assert page.get("/ui/memories").status_code == 401
        assert guest.get("/ui/memories").status_code == 401
        assert "Log in" in page.get("/").text
    with gateway.client() as api:  # the tokens themselves still work
        assert api.get("/api/memories").status_code == 200


def test_logout_all_works_with_no_server_running(
    lore: Runtime, capsys: pytest.CaptureFixture[str]
) -> None:
    from lore.cli import main

    with running_gateway(lore) as gateway:
        page = gateway.page()
    assert main(["serve", "--logout-all"]) == 0
    assert main(["serve", "--logout-all"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "lore serve: logged out 1 web page log-in",
        "lore serve: logged out 0 web page log-ins",
    ]
    with running_gateway(lore) as restarted:
        page.base_url = httpx.URL(restarted.url)
        with page:
            assert page.get("/ui/memories").status_code == 401


# -- CSRF --------------------------------------------------------------------------------


def test_a_form_post_without_the_pages_csrf_token_changes_nothing(gateway: Gateway) -> None:
    with gateway.page() as page:
        page.headers.pop(CSRF_HEADER)
        missing = page.post("/ui/memories", params={"scope": SCOPE}, data={"content": "晚安"})
        wrong = page.post(
            "/ui/memories",
            params={"scope": SCOPE},
            data={"content": "晚安", "csrf_token": "x" * 43},
        )
        chat = page.post(
            "/v1/chat/completions",
            json={"model": "lore", "messages": [{"role": "user", "content": "привет"}]},
        )
        approval = page.post("/ui/approvals/anything", data={"decision": "approve"})
    for refused in (missing, wrong, chat, approval):
        assert refused.status_code == 403
        assert refused.json()["error"]["message"] == (
            "this request did not come from Lore's page (no valid CSRF token): reload the page"
        )
    assert _contents(gateway.lore) == [] and gateway.lore.sessions.live_meta(SCOPE) is None


def test_the_csrf_token_may_come_as_a_form_field(gateway: Gateway) -> None:
    with gateway.page() as page:
        csrf = page.headers.pop(CSRF_HEADER)
        added = page.post(
            "/ui/memories", params={"scope": SCOPE}, data={"content": "晚安", "csrf_token": csrf}
        )
    assert added.status_code == 200 and _contents(gateway.lore) == ["晚安"]


@pytest.mark.parametrize(
    "headers",
    [
        {"Origin": "http://127.0.0.1:9"},
        {"Origin": "null"},
        {"Sec-Fetch-Site": "same-site"},
        {"Sec-Fetch-Site": "cross-site"},
    ],
)
def test_a_request_from_another_origin_is_refused_even_with_the_csrf_token(
    gateway: Gateway, headers: dict[str, str]
) -> None:
    with gateway.page() as page:
        refused = page.post(
            "/ui/memories", params={"scope": SCOPE}, data={"content": "晚安"}, headers=headers
        )
        forget = page.post("/ui/reminders", data={"text": "x", "when": "tomorrow"}, headers=headers)
    assert refused.status_code == 403 and forget.status_code == 403
    assert "another site" in refused.json()["error"]["message"]
    assert _contents(gateway.lore) == [] and gateway.lore.reminders.list(SCOPE) == []


def test_the_pages_own_requests_pass(gateway: Gateway) -> None:
    own = {"Origin": gateway.url, "Sec-Fetch-Site": "same-origin"}
    with gateway.page() as page:
        added = page.post(
            "/ui/memories", params={"scope": SCOPE}, data={"content": "Маша"}, headers=own
        )
        reminded = page.post(
            "/ui/reminders", data={"text": "позвонить", "when": "tomorrow 9am"}, headers=own
        )
    assert added.status_code == 200 and reminded.status_code == 200
    assert _contents(gateway.lore) == ["Маша"] and len(gateway.lore.reminders.list(SCOPE)) == 1


@pytest.mark.parametrize(("trusted", "status"), [(("127.0.0.1",), 200), ((), 403)])
def test_behind_a_trusted_proxy_the_origin_is_the_host_the_proxy_names(
    config: Config,
    model: ScriptedProvider,
    clock: FixedClock,
    trusted: tuple[str, ...],
    status: int,
) -> None:
    proxied = {"X-Forwarded-Host": "lore.example", "Origin": "https://lore.example"}
    lore = build(_settings(config, trusted_proxies=trusted), provider=model, clock=clock)
    with running_gateway(lore) as gateway, gateway.page() as page:
        answer = page.post(
            "/ui/memories", params={"scope": SCOPE}, data={"content": "代理"}, headers=proxied
        )
    lore.db.close()
    assert answer.status_code == status


def test_a_login_form_posted_from_another_site_is_refused(gateway: Gateway) -> None:
    answer = _log_in(gateway, {"Sec-Fetch-Site": "cross-site", "Origin": "http://evil.test"})
    assert answer.status_code == 403 and COOKIE not in answer.cookies


def test_bearer_token_clients_need_no_csrf_token(gateway: Gateway) -> None:
    with gateway.client() as api:
        added = api.post("/api/memories", params={"scope": SCOPE}, json={"content": "咖啡"})
        form = api.post("/ui/memories", params={"scope": SCOPE}, data={"content": "茶"})
    assert added.status_code == 201 and form.status_code == 200
    assert sorted(_contents(gateway.lore)) == ["咖啡", "茶"]


def test_each_log_in_has_its_own_csrf_token(gateway: Gateway) -> None:
    with gateway.page() as first, gateway.page() as second:
        assert first.headers[CSRF_HEADER] != second.headers[CSRF_HEADER]
        first.headers[CSRF_HEADER] = second.headers[CSRF_HEADER]
        refused = first.post("/ui/memories", params={"scope": SCOPE}, data={"content": "x"})
        assert page_csrf(first.get("/").text) != second.headers[CSRF_HEADER]
    assert refused.status_code == 403


# -- headers -----------------------------------------------------------------------------


def test_every_answer_carries_the_security_headers(gateway: Gateway) -> None:
    with gateway.page() as page:
        answers = [
            page.get("/"),
            page.get("/ui/memories"),
            page.get("/static/chat.js"),
            page.get("/health"),
            page.get("/nothing-here"),
        ]
    with httpx.Client(base_url=gateway.url) as anonymous:
        answers.append(anonymous.get("/"))
    for answer in answers:
        headers = answer.headers
        policy = dict(
            (part.strip().split(" ", 1) + [""])[:2]
            for part in headers["content-security-policy"].split(";")
        )
        assert policy["script-src"] == "'self'", answer.url
        assert policy["frame-ancestors"] == "'none'"
        assert policy["object-src"] == "'none'" and policy["base-uri"] == "'none'"
        assert "unsafe" not in headers["content-security-policy"]
        assert headers["x-frame-options"] == "DENY"
        assert headers["referrer-policy"] == "same-origin"
        assert headers["x-content-type-options"] == "nosniff"


def test_no_template_or_static_file_runs_inline_script() -> None:
    inline_script = re.compile(r"<script(?![^>]*\ssrc=)[^>]*>", re.I)
    handler = re.compile(r"\son[a-z]+\s*=|javascript:|\sstyle\s*=", re.I)
    for path in [*TEMPLATES.glob("*.html"), STATIC / "chat.js"]:
        text = path.read_text(encoding="utf-8")
        assert not inline_script.search(text), path.name
        if path.suffix == ".html":
            assert not handler.search(text), path.name
