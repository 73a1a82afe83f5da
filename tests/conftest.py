"""Shared fixtures. Tests never touch $HOME and can never reach a real paid API."""

from __future__ import annotations

import os
import socket
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from lore.backends.fake.embedder import HashEmbedder
from lore.clock import FixedClock
from lore.config import Config, load_config
from lore.llm.scripted import ScriptedProvider
from lore.runtime import Runtime, build

_real_connect = socket.socket.connect
# The environment as the test run started, before fixtures scrub it: the opt-in real
# provider evaluation (LORE_EVAL_MODEL) reads its keys from here.
ORIGINAL_ENV = dict(os.environ)


def _loopback_only(self: socket.socket, address: str | bytes | tuple[Any, ...]) -> None:
    host = address[0] if isinstance(address, tuple) else address
    if isinstance(host, str) and not (
        host.startswith("127.") or host in ("localhost", "::1") or self.family == socket.AF_UNIX
    ):
        raise RuntimeError(f"tests may not reach the network ({host})")
    _real_connect(self, address)


@pytest.fixture(autouse=True)
def _no_network_and_no_home(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> Iterator[None]:
    real = request.node.get_closest_marker("real_provider") and ORIGINAL_ENV.get("LORE_EVAL_MODEL")
    if not real:
        monkeypatch.setattr(socket.socket, "connect", _loopback_only)
    fake_home = tmp_path / "fake-home"
    fake_home.mkdir()
    monkeypatch.setenv("HOME", str(fake_home))
    monkeypatch.setenv("LORE_HOME", str(tmp_path / "lore-home"))
    for var in (
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "BRAVE_API_KEY",  # else web_search would be on in every test
        "LORE_MODEL",
        "OPENAI_BASE_URL",
        "OPENAI_API_BASE",
        "OLLAMA_HOST",
        "LORE_TIMEZONE",
        "TZ",
        "XDG_CONFIG_HOME",  # else ~/.config is not the fake home's (lore service install)
    ):
        monkeypatch.delenv(var, raising=False)
    yield


_HASH_EMBEDDER = HashEmbedder()


@pytest.fixture(autouse=True)
def _hash_embedder_unless_judging_search(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Search embeds with the hash embedder (no model loaded, microseconds a text), but
    in tests marked `search_quality`, which judge what the real model finds."""
    if request.node.get_closest_marker("search_quality") is None:
        monkeypatch.setattr("lore.embed.default_embedder", lambda: _HASH_EMBEDDER)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "lore-home"


@pytest.fixture
def storage() -> str:
    """Where the runtime keeps its data: "local" (SQLite and files). A module whose tests
    run on both backends overrides it: `storage = pytest.fixture(params=STORAGES)(...)`,
    see tests/postgres_server.py."""
    return "local"


@pytest.fixture
def config(home: Path, storage: str) -> Config:
    env = {"LORE_HOME": str(home), "USER": "john"}
    if storage == "postgres":
        from tests.postgres_server import PostgresUnavailable, empty_lore_database

        try:
            env["LORE_DATABASE_URL"] = empty_lore_database()
        except PostgresUnavailable as exc:
            pytest.skip(f"PostgreSQL cannot start here: {exc}")
    return load_config(
        env=env,
        # Extraction is an extra model call after every turn; its own tests turn it on.
        flags={"model": "scripted", "timezone": "Asia/Taipei", "extraction.enabled": False},
    )


@pytest.fixture
def clock() -> FixedClock:
    return FixedClock(datetime(2026, 11, 30, 9, 0, tzinfo=UTC))


@pytest.fixture
def model() -> ScriptedProvider:
    return ScriptedProvider()


@pytest.fixture
async def lore(
    config: Config, model: ScriptedProvider, clock: FixedClock
) -> AsyncIterator[Runtime]:
    runtime = build(config, provider=model, clock=clock)
    yield runtime
    await runtime.aclose()
