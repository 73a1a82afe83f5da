"""Settings precedence: flag > environment > config.toml > default; keys redacted."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from lore.cli import main
from lore.config import load_config, parse_model
from lore.errors import ConfigError


def test_flag_beats_env_beats_file_beats_default(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text(
        'model = "ollama/qwen2.5"\nmax_tool_rounds = 4\n[memory]\nbudget_chars = 900\n'
    )
    env = {"LORE_HOME": str(tmp_path)}
    assert load_config(env=env).model == "ollama/qwen2.5"
    assert load_config(env=env).memory.budget_chars == 900
    env["LORE_MODEL"] = "openai/gpt-4o-mini"
    assert load_config(env=env).model == "openai/gpt-4o-mini"
    assert load_config(env=env, flags={"model": "anthropic/claude-x"}).model == "anthropic/claude-x"
    assert load_config(env=env).max_tool_rounds == 4
    assert load_config(env={"LORE_HOME": str(tmp_path / "other")}).max_tool_rounds == 10


def test_the_speaker_is_the_login_name_even_without_user_in_the_environment(
    tmp_path: Path,
) -> None:
    import pwd

    env = {"LORE_HOME": str(tmp_path)}  # as under cron, systemd or `env -i`
    assert load_config(env=env).user_name == pwd.getpwuid(os.getuid()).pw_name
    assert load_config(env={**env, "USER": "john"}).user_name == "john"
    assert load_config(env={**env, "USER": "john", "LORE_USER": "анна"}).user_name == "анна"


def test_openai_base_url_reads_both_variable_names(tmp_path: Path) -> None:
    base = {"LORE_HOME": str(tmp_path)}
    assert (
        load_config(env={**base, "OPENAI_API_BASE": "http://a/v1"}).openai_base_url == "http://a/v1"
    )
    both = {**base, "OPENAI_API_BASE": "http://a/v1", "OPENAI_BASE_URL": "http://b/v1"}
    assert load_config(env=both).openai_base_url == "http://b/v1"


def test_default_model_follows_available_keys(tmp_path: Path) -> None:
    home = {"LORE_HOME": str(tmp_path)}
    assert str(load_config(env=home).model_spec()) == "local"
    assert load_config(env={**home, "OPENAI_API_KEY": "sk-x"}).model_spec().provider == "openai"
    assert load_config(env={**home, "ANTHROPIC_API_KEY": "k"}).model_spec().provider == "anthropic"


@pytest.mark.parametrize("bad", ["gpt-4o", "openai", "foo/bar", "openai/"])
def test_bad_model_names_are_refused_with_one_line(bad: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_model(bad)
    assert "\n" not in str(info.value)


def test_unknown_and_malformed_settings_are_refused(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text("modle = 'x'\n")
    with pytest.raises(ConfigError, match="unknown setting 'modle'"):
        load_config(env={"LORE_HOME": str(tmp_path)})
    (tmp_path / "config.toml").write_text("model = \n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_config(env={"LORE_HOME": str(tmp_path)})
    (tmp_path / "config.toml").write_text("max_tool_rounds = 'many'\n")
    with pytest.raises(ConfigError, match="max_tool_rounds"):
        load_config(env={"LORE_HOME": str(tmp_path)})


def test_config_show_redacts_keys(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-abcdefghijklmnopqrstuvwxyz123456")
    assert main(["config", "show"]) == 0
    out = capsys.readouterr().out
    assert "sk-abcdefghijklmnopqrstuvwxyz123456" not in out
    assert "openai_api_key = 'sk-…3456'" in out
    assert "model = 'openai/gpt-4o-mini'" in out


def test_broken_config_file_gives_one_line_and_exit_1(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    home.mkdir(parents=True)
    (home / "config.toml").write_text("[[[")
    assert main(["config", "show"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("lore: ") and err.count("\n") == 1


def test_the_owners_scopes_are_the_terminals_and_their_own_one_to_one_chats(
    tmp_path: Path,
) -> None:
    from dataclasses import replace

    from lore.config import OWNER_SCOPE, ChannelsConfig, LineConfig, TelegramConfig

    config = replace(
        load_config(env={"LORE_HOME": str(tmp_path)}),
        telegram=TelegramConfig(owner_ids=("111",)),
        line=LineConfig(owner_ids=("U111",)),
    )
    owners = ["cli:default", "cli:работа", "telegram:111", "line:user:U111", OWNER_SCOPE]
    assert all(config.is_owner_scope(key) for key in owners)
    others = ["api:default", "telegram:222", "telegram:-111", "line:group:U111", "line:U111"]
    others += ["clix:1", "line:user:U111:x", "", "cli:a\nb"]  # the last two are no keys
    assert not any(config.is_owner_scope(key) for key in others)

    unified = replace(config, channels=ChannelsConfig(unified_owner_session=True))
    joined = ["cli:default", "telegram:111", "line:user:U111"]
    assert [unified.conversation_scope(key) for key in joined] == [OWNER_SCOPE] * 3
    # Only a 1:1 chat joins the owner's conversation, even when the config names a group
    # as the owner's; and a string that is no key stays as it is.
    group = replace(unified, owner_scopes=("telegram:-100", "telegram:42"))
    assert group.conversation_scope("telegram:-100") == "telegram:-100"
    assert group.conversation_scope("telegram:42") == OWNER_SCOPE
    assert unified.conversation_scope("cli:a\nb") == "cli:a\nb"
