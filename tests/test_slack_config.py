"""Slack's settings: the tokens it needs together, each refused alone with one line; the
owner's DM is the owner's conversation; the tokens never shown."""

from __future__ import annotations

from pathlib import Path

import pytest

from lore.config import Config, load_config
from lore.errors import ConfigError

OWNER = "U061F7AUR"


def _load(home: Path, **env: str) -> Config:
    return load_config(env={"LORE_HOME": str(home), "USER": "john", **env})


@pytest.mark.parametrize(
    ("env", "says"),
    [
        ({"SLACK_BOT_TOKEN": "xoxb-1"}, "Slack needs 'slack.app_token' (Socket Mode) or"),
        ({"SLACK_APP_TOKEN": "xapp-1"}, "Slack needs the bot token (xoxb-…) too"),
        ({"SLACK_SIGNING_SECRET": "abc"}, "Slack needs the bot token (xoxb-…) too"),
    ],
)
def test_a_slack_token_alone_is_refused_in_one_line(
    tmp_path: Path, env: dict[str, str], says: str
) -> None:
    with pytest.raises(ConfigError) as refused:
        _load(tmp_path, **env)
    assert str(refused.value).startswith(says) and "\n" not in str(refused.value)


def test_the_owners_dm_is_theirs_and_a_channel_or_thread_is_not(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text(
        f'[slack]\nowner_ids = ["{OWNER}"]\n[channels]\nunified_owner_session = true\n'
        'reminder_channel = "slack"\n',
        encoding="utf-8",
    )
    config = load_config(
        env={
            "LORE_HOME": str(tmp_path),
            "USER": "john",
            "SLACK_BOT_TOKEN": "xoxb-secret-bot",
            "SLACK_APP_TOKEN": "xapp-secret-app",
        }
    )
    assert config.slack.enabled
    assert config.is_owner_scope(f"slack:{OWNER}")
    assert config.conversation_scope(f"slack:{OWNER}") == "owner"
    for scope in ("slack:U2AMY0001", "slack:C0FAMILY01", f"slack:C0FAMILY01:{OWNER}"):
        assert not config.is_owner_scope(scope)
        assert config.conversation_scope(scope) == scope
    shown = str(config.redacted())
    assert "xoxb-secret-bot" not in shown and "xapp-secret-app" not in shown
