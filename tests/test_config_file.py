"""The first run writes a commented config.toml listing every setting at its default, from
the schema itself: uncommented, it loads to exactly the defaults."""

from __future__ import annotations

import tomllib
from dataclasses import fields, is_dataclass, replace
from pathlib import Path

import pytest

from lore.cli import main
from lore.config import Config, load_config
from lore.config_file import DESCRIPTIONS, render_template


def _dotted_settings() -> set[str]:
    names: set[str] = set()
    defaults = Config(home=Path("/x"))
    for f in fields(Config):
        value = getattr(defaults, f.name)
        if f.name == "home":
            continue
        if is_dataclass(value):
            names |= {f"{f.name}.{inner.name}" for inner in fields(value)}
        else:
            names.add(f.name)
    return names


def test_every_setting_has_one_line_of_description() -> None:
    assert _dotted_settings() <= set(DESCRIPTIONS), _dotted_settings() - set(DESCRIPTIONS)


def test_uncommented_the_template_loads_to_the_defaults(tmp_path: Path) -> None:
    text = render_template()
    assert all(line.startswith("#") or not line for line in text.splitlines())
    uncommented = "\n".join(
        line[2:] for line in text.splitlines() if line.startswith("# ") and "=" in line
        or line.startswith("# [")
    )  # fmt: skip
    values = tomllib.loads(uncommented)
    (tmp_path / "config.toml").write_text(uncommented, encoding="utf-8")
    env = {"LORE_HOME": str(tmp_path), "USER": "john"}
    defaults = load_config(env={**env, "LORE_HOME": str(tmp_path / "none")})
    assert load_config(env=env) == replace(defaults, home=tmp_path)
    assert values["memory"]["budget_chars"] == 2000 and values["max_tool_rounds"] == 10


def test_the_first_command_writes_it_and_never_overwrites(
    capsys: pytest.CaptureFixture[str], home: Path
) -> None:
    assert main(["memory", "list"]) == 0
    written = (home / "config.toml").read_text(encoding="utf-8")
    assert "# budget_chars = 2000" in written and "# [consolidation]" in written
    assert (home / "config.toml").stat().st_mode & 0o077 == 0  # keys may go in it
    (home / "config.toml").write_text('user_name = "Anna"\n', encoding="utf-8")
    assert main(["memory", "list"]) == 0
    assert (home / "config.toml").read_text(encoding="utf-8") == 'user_name = "Anna"\n'
