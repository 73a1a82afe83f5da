"""The public surface is pinned: changing it is a deliberate act. `lore.__all__`, the
signatures of Memory, AsyncMemory, Client and AsyncClient and the fields of the hit type,
the lazy loading of those names, and the documentation's example, run as written."""

from __future__ import annotations

import dataclasses
import inspect
import re
import subprocess
import sys
from pathlib import Path

import pytest

import lore

README = Path(__file__).resolve().parent.parent / "docs" / "library.md"

ALL = [
    "Added",
    "AsyncClient",
    "AsyncMemory",
    "Client",
    "Config",
    "Forgotten",
    "HistoryEntry",
    "LoreError",
    "Memory",
    "MemoryBlock",
    "MemoryRecord",
    "ReminderRecord",
    "Runtime",
    "ScriptedProvider",
    "SearchHit",
    "__version__",
    "build",
    "load_config",
]

METHODS = {
    "add": "(self, said: 'Said', *, scope: 'str | None' = None, author: 'str | None' = None)"
    " -> 'Added'",
    "remember": "(self, text: 'str', *, scope: 'str | None' = None, author: 'str | None' = None,"
    " kind: 'str' = 'fact', keywords: 'Iterable[str]' = ()) -> 'MemoryRecord'",
    "forget": "(self, memory_id: 'int | None' = None, *, phrase: 'str | None' = None,"
    " scope: 'str | None' = None, everywhere: 'bool' = False) -> 'Forgotten'",
    "search": "(self, query: 'str', *, scope: 'str | None' = None, when: 'str | None' = None,"
    " limit: 'int' = 10) -> 'list[SearchHit]'",
    "block": "(self, scope: 'str | None' = None) -> 'MemoryBlock'",
    "history": "(self, memory_id: 'int', *, scope: 'str | None' = None) -> 'list[HistoryEntry]'",
    "reminders": "(self, scope: 'str | None' = None, *, include_done: 'bool' = False)"
    " -> 'list[ReminderRecord]'",
}

EMBEDDED_INIT = (
    "(self, home: 'str | Path | None' = None, *, database_url: 'str | None' = None,"
    " config: 'Config | None' = None, scope: 'str' = 'api:default',"
    " provider: 'Provider | None' = None, clock: 'Clock | None' = None,"
    " embedder: 'Embedder | None' = None) -> 'None'"
)
CLIENT_INIT = (
    "(self, url: 'str' = 'http://127.0.0.1:8765', *, token: 'str | None' = None,"
    " scope: 'str | None' = None, timeout: 'float' = 60.0, attempts: 'int' = 3,"
    " max_wait: 'float' = 30.0, transport: 'httpx.{}BaseTransport | None' = None) -> 'None'"
)

HIT_FIELDS = [
    ("kind", "str"),
    ("text", "str"),
    ("score", "float"),
    ("id", "int | None"),
    ("locator", "str"),
    ("time", "datetime"),
    ("source", "Mapping[str, Any]"),
    ("scope", "str"),
    ("speaker", "str | None"),
    ("superseded_by", "int | None"),
]


def test_public_names_are_pinned() -> None:
    assert sorted(lore.__all__) == ALL


def test_every_public_name_resolves() -> None:
    for name in lore.__all__:
        assert getattr(lore, name) is not None
    assert lore.Runtime.__module__ == "lore.runtime"
    assert lore.build.__module__ == "lore.runtime"
    assert issubclass(lore.LoreError, Exception)
    assert lore.Memory.__module__ == "lore.embedded" and lore.Client.__module__ == "lore.client"


@pytest.mark.parametrize(
    ("cls", "init", "closing", "is_async"),
    [
        (lore.Memory, EMBEDDED_INIT, "close", False),
        (lore.AsyncMemory, EMBEDDED_INIT, "aclose", True),
        (lore.Client, CLIENT_INIT.format(""), "close", False),
        (lore.AsyncClient, CLIENT_INIT.format("Async"), "aclose", True),
    ],
)
def test_the_four_entry_points_have_the_same_pinned_methods(
    cls: type, init: str, closing: str, is_async: bool
) -> None:
    assert str(inspect.signature(cls.__init__)) == init  # type: ignore[misc]
    public = {n for n, v in vars(cls).items() if callable(v) and not n.startswith("_")}
    assert public == {*METHODS, closing}
    for name, signature in METHODS.items():
        method = getattr(cls, name)
        assert str(inspect.signature(method)) == signature, name
        assert inspect.iscoroutinefunction(method) is is_async, name
        assert method.__doc__ == getattr(lore.AsyncMemory, name).__doc__, name
    assert hasattr(cls, "__aenter__" if is_async else "__enter__")


def test_the_hit_type_is_a_frozen_dataclass_with_pinned_fields() -> None:
    fields = [(f.name, f.type) for f in dataclasses.fields(lore.SearchHit)]
    assert fields == HIT_FIELDS
    assert lore.SearchHit.__dataclass_params__.frozen  # type: ignore[attr-defined]


def test_import_lore_loads_none_of_it_until_asked() -> None:
    probe = (
        "import sys, lore; before = sorted(m for m in sys.modules if m in"
        " ('httpx', 'lore.embedded', 'lore.client', 'lore.runtime'));"
        " lore.Memory; lore.Client; print(before, 'lore.client' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[] True"


def _readme_example() -> tuple[str, str]:
    text = README.read_text(encoding="utf-8")
    found = re.search(
        r"<!-- program: memory -->\n```python\n(.*?)```\n[^\n]*\n```text\n(.*?)```", text, re.S
    )
    assert found, "docs/library.md has no example under 'Lore's memory in your own program'"
    return found.group(1), found.group(2)


def test_the_readme_example_runs_and_prints_what_the_readme_shows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code, shown = _readme_example()
    assert "# Lore's memory in your own program" in README.read_text(encoding="utf-8")
    assert len(code.strip().splitlines()) <= 12
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("USER", "john")
    exec(compile(code, "docs/library.md", "exec"), {})  # no model configured: plain memories
    printed = capsys.readouterr().out
    day = re.compile(r"\d{4}-\d{2}-\d{2}")
    assert day.sub("DAY", printed) == day.sub("DAY", shown)
    assert (tmp_path / "agent-home" / "lore.db").exists()


ADAPTERS = {
    "lore.adapters.openai_agents": ["LoreSession"],
    "lore.adapters.langchain": ["LoreChatMessageHistory", "LoreRetriever"],
    "lore.adapters.pydantic_ai": ["LoreMessageHistory"],
}


def test_the_adapters_names_are_pinned_and_outside_import_lore() -> None:
    import importlib

    for module, names in ADAPTERS.items():
        assert sorted(importlib.import_module(module).__all__) == names, module
    from lore.adapters.openai_agents import LoreSession

    assert str(inspect.signature(LoreSession.__init__)) == (
        "(self, memory: 'Memory | AsyncMemory', scope: 'str | None' = None, *,"
        " session_settings: 'SessionSettings | None' = None) -> 'None'"
    )
    probe = "import sys, lore; lore.Memory; print(any('adapters' in m for m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


@pytest.mark.parametrize(
    ("module", "framework", "extra"),
    [
        ("openai_agents", "agents", "agents"),
        ("langchain", "langchain_core", "langchain"),
        ("pydantic_ai", "pydantic_ai", "pydantic-ai"),
    ],
)
def test_an_adapter_without_its_framework_says_how_to_install_it(
    module: str, framework: str, extra: str
) -> None:
    probe = (
        f"import sys; sys.modules[{framework!r}] = None\n"
        f"try:\n    import lore.adapters.{module}\n"
        "except ImportError as exc:\n    print(exc)"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.startswith(f"lore.adapters.{module} needs ")
    assert f"-m pip install 'lore-assistant[{extra}]'" in done.stdout
