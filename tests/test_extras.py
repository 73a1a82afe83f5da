"""An install hint names the installer of the environment Lore runs in, and the
distribution by its own name (`lore-assistant`), so following it installs the extra where
this Lore imports from."""

from __future__ import annotations

import sys

import pytest

from lore.config import Config
from lore.errors import ConfigError
from lore.extras import install_hint


def test_a_hint_in_a_virtual_environment_uses_its_own_interpreter() -> None:
    hint = install_hint(
        "line", prefix="/home/amy/lore/.venv", python="/home/amy/lore/.venv/bin/python"
    )
    assert hint == "/home/amy/lore/.venv/bin/python -m pip install 'lore-assistant[line]'"


def test_a_path_with_a_space_is_quoted() -> None:
    hint = install_hint("telegram", prefix="/x", python="/Users/Amy Li/lore/bin/python")
    assert hint == "'/Users/Amy Li/lore/bin/python' -m pip install 'lore-assistant[telegram]'"


def test_pipx_and_uv_tool_environments_are_reinstalled_with_the_extra() -> None:
    pipx = install_hint("postgres", prefix="/home/amy/.local/share/pipx/venvs/lore-assistant")
    uv = install_hint("local", prefix="/home/amy/.local/share/uv/tools/lore-assistant")
    assert pipx == "pipx install --force 'lore-assistant[postgres]'"
    assert uv == "uv tool install --force 'lore-assistant[local]'"


def test_the_running_interpreter_is_named_by_default() -> None:
    assert install_hint("line").startswith(sys.executable)


def test_a_database_url_without_psycopg_says_how_to_add_it(
    config: Config, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dataclasses import replace

    from lore.runtime import build

    for name in [m for m in sys.modules if m.startswith("lore.backends.postgres")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "psycopg", None)
    lore = build(replace(config, database_url="postgresql://localhost/lore"))
    with pytest.raises(ConfigError) as caught:
        _ = lore.memory
    message = str(caught.value)
    assert "\n" not in message and "needs psycopg" in message
    assert "'lore-assistant[postgres]'" in message


def test_a_home_on_sqlite_never_imports_the_postgres_driver(config: Config) -> None:
    from lore.runtime import build

    assert build(config).postgres is None
