"""`[mcp.servers.NAME]`: read from config.toml, checked before anything starts, its keys
masked wherever the settings are shown."""

from __future__ import annotations

from pathlib import Path

import pytest

from lore.config import Config, load_config
from lore.errors import ConfigError


def _load(tmp_path: Path, toml: str) -> Config:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    (home / "config.toml").write_text(toml, encoding="utf-8")
    return load_config(env={"LORE_HOME": str(home), "USER": "john"})


def test_a_stdio_and_an_http_server_are_read_with_their_trust_levels(tmp_path: Path) -> None:
    config = _load(
        tmp_path,
        "[mcp]\ntimeout = 12\n"
        '[mcp.servers.files]\ncommand = "npx"\nargs = ["-y", "server-files", "/srv"]\n'
        'env = { ROOT = "/srv" }\ntrust = "allow"\ntools = { write = "ask", wipe = "never" }\n'
        '[mcp.servers.weather]\nurl = "https://weather.example/mcp"\n'
        'headers = { Authorization = "Bearer abcdefghijkl" }\ntimeout = 5\n',
    )
    files, weather = config.mcp.servers["files"], config.mcp.servers["weather"]
    assert (files.command, files.args, files.env) == (
        "npx",
        ("-y", "server-files", "/srv"),
        {"ROOT": "/srv"},
    )
    assert (files.trust, files.tools) == ("allow", {"write": "ask", "wipe": "never"})
    assert (weather.url, weather.trust, weather.timeout) == (
        "https://weather.example/mcp",
        "ask",
        5.0,
    )
    assert config.mcp.timeout == 12.0
    shown = config.redacted()["mcp"]["servers"]["weather"]["headers"]
    assert shown == {"Authorization": "Bea…ijkl"}


@pytest.mark.parametrize(
    ("toml", "said"),
    [
        ('[mcp.servers.x]\ncommand = "a"\nurl = "http://h/mcp"', "needs either 'command'"),
        ('[mcp.servers.x]\ntrust = "ask"', "needs either 'command'"),
        ('[mcp.servers.x]\nurl = "ftp://h/mcp"', "must start with http:// or https://"),
        (
            '[mcp.servers.x]\ncommand = "a"\ntrust = "sometimes"',
            "'mcp.servers.x.trust' is 'sometimes'",
        ),
        (
            '[mcp.servers.x]\ncommand = "a"\ntools = { t = "yes" }',
            "'mcp.servers.x.tools.t' is 'yes'",
        ),
        ('[mcp.servers."a b"]\ncommand = "a"', "a server's name must be"),
        ('[mcp.servers.a__b]\ncommand = "a"', "a server's name must be"),
        ('[mcp.servers.x]\ncommand = "a"\ntimeout = -1', "'mcp.servers.x.timeout' is -1.0"),
        ('[mcp.servers.x]\ncommand = "a"\nport = 1', "unknown setting mcp.servers.x.'port'"),
        ("[mcp]\ntimeout = 0", "setting 'mcp.timeout' is 0.0"),
    ],
)
def test_a_bad_mcp_server_setting_is_refused_in_one_line(
    tmp_path: Path, toml: str, said: str
) -> None:
    with pytest.raises(ConfigError) as refused:
        _load(tmp_path, toml)
    assert said in str(refused.value)
    assert "\n" not in str(refused.value)
