"""Forget everywhere finds every store that keeps people's words by its type: each store
of each backend is `Redactable`, or one of the few erased some other way, and a store
that is neither stops forget-everywhere rather than being skipped in silence."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from lore.backends.fake.backend import FakeBackend
from lore.config import Config
from lore.errors import ConfigError
from lore.llm.scripted import ScriptedProvider
from lore.memory.purge import purge_everywhere, text_stores
from lore.ports.backend import STORES, Backend
from lore.ports.redaction import Redactable
from lore.runtime import Runtime, build
from tests.postgres_server import storage  # noqa: F401 (each test on SQLite and PostgreSQL)

# Erased by id (memories) or rebuilt (the index): see lore.memory.purge.
ERASED_OTHERWISE = {"memory", "search_index"}


@pytest.fixture
def lore(config: Config, model: ScriptedProvider) -> Iterator[Runtime]:
    runtime = build(config, provider=model)
    yield runtime
    runtime.close()


def _backends(lore: Runtime) -> list[Backend]:
    return [lore.backend, FakeBackend()]


def test_every_store_that_keeps_text_is_redactable(lore: Runtime) -> None:
    for backend in _backends(lore):
        for name in STORES:
            if name in ERASED_OTHERWISE:
                continue
            if name == "tasks" and isinstance(backend, FakeBackend):
                with pytest.raises(ConfigError, match="scheduled tasks need a database"):
                    getattr(backend, name)  # it keeps none, so none of their text
                continue
            store = getattr(backend, name)
            if name == "sessions":  # messages: every field through the redactor
                assert callable(getattr(store, "redact_messages", None))
                continue
            assert isinstance(store, Redactable), f"{type(backend).__name__}.{name}"
            assert store.redacted_noun


def test_forget_everywhere_reaches_each_store_found_by_type(lore: Runtime) -> None:
    found = text_stores(lore)
    nouns = [s.redacted_noun for s in found if isinstance(s, Redactable)]
    assert nouns == [
        "reminder",
        "task",
        "delivery",
        "history entry",
        "chat message not yet answered",
    ]
    assert lore.sessions in found


class _Notebook:
    """A store someone added that keeps text but never learnt to redact it."""

    def append(self, text: str) -> None: ...


class _WithANewStore(FakeBackend):
    @property
    def chat_ledger(self) -> _Notebook:  # type: ignore[override]
        return _Notebook()


def test_a_store_that_keeps_text_and_cannot_redact_it_stops_forget_everywhere(
    config: Config, model: ScriptedProvider
) -> None:
    lore = build(config, provider=model, backend=_WithANewStore())  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="the chat_ledger store keeps text but is not Redactable"):
        purge_everywhere(
            lore, "cli:default", phrase="Анна любит джаз", erase=False, by="john", via="cli"
        )
