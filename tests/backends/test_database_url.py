"""`database_url` (or LORE_DATABASE_URL) names the PostgreSQL database; its password
never shows, and a database that cannot be reached is one clear error."""

from __future__ import annotations

from pathlib import Path

import pytest

from lore.cli import main
from lore.config import load_config
from lore.errors import StoreError


def test_the_database_url_comes_from_the_file_or_the_environment(tmp_path: Path) -> None:
    assert load_config(env={"LORE_HOME": str(tmp_path)}).database_url == ""
    (tmp_path / "config.toml").write_text('database_url = "postgresql://lore@db/lore"\n')
    assert load_config(env={"LORE_HOME": str(tmp_path)}).database_url == "postgresql://lore@db/lore"
    env = {"LORE_HOME": str(tmp_path), "LORE_DATABASE_URL": "postgresql://lore@other/lore"}
    assert load_config(env=env).database_url == "postgresql://lore@other/lore"


def test_config_show_hides_the_database_password(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("LORE_DATABASE_URL", "postgresql://lore:s3cr3t-pw@db.example:5432/lore")
    assert main(["config", "show"]) == 0
    out = capsys.readouterr().out
    assert "s3cr3t-pw" not in out
    assert "postgresql://lore:***@db.example:5432/lore" in out


@pytest.mark.postgres
def test_an_unreachable_database_is_one_clear_error_without_the_password() -> None:
    from lore.backends.postgres.database import PostgresDatabase

    with pytest.raises(StoreError, match="cannot connect to PostgreSQL") as refused:
        PostgresDatabase("postgresql://lore:pw-123@127.0.0.1:1/lore?connect_timeout=1", timeout=1)
    assert "pw-123" not in str(refused.value)
