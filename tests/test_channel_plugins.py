"""Chat channels as plugins: a package outside Lore adds one through a `lore.channels`
entry point, and `lore serve` finds, connects, runs and delivers through it as it does
its own. The plugin is the one docs/channels.md shows, installed for real: its module and
a `.dist-info` with its `entry_points.txt` on `sys.path`, as pip would leave them."""

from __future__ import annotations

import asyncio
import json
import re
import socket
import tomllib
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from lore.channels.plugin import BUILT_IN, GROUP, Channel, ChannelPlugin, discover
from lore.clock import FixedClock
from lore.config import Config, load_config
from lore.daemon import Daemon
from lore.errors import ConfigError
from lore.llm.base import ChatRequest, ToolCall
from lore.llm.scripted import ScriptedProvider, Step
from lore.runtime import build
from tests.fake_api import FakeApi, Request
from tests.readme_transcripts import docs_text

REPO = Path(__file__).resolve().parent.parent
TOKEN = "echo-shared-secret"


class EchoService(FakeApi):
    """The chat service's side: takes the replies Lore posts to `reply_url`."""

    def answer(self, request: Request) -> tuple[int, dict[str, Any]]:
        with self._changed:
            self.sent.append(json.loads(request.body))
            self._changed.notify_all()
        return 200, {"ok": True}


def _install_example(site: Path) -> None:
    """The example channel of docs/channels.md, installed as a distribution would be."""
    text = (REPO / "docs" / "channels.md").read_text(encoding="utf-8")
    found = re.search(r'```python title="lore_echochat.py"\n(.*?)```', text, re.DOTALL)
    assert found, "docs/channels.md shows the example channel"
    site.mkdir()
    (site / "lore_echochat.py").write_text(found.group(1), encoding="utf-8")
    info = site / "lore_echochat-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: lore-echochat\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[{GROUP}]\necho = lore_echochat:PLUGIN\n")


@pytest.fixture
def installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    site = tmp_path / "site-packages"
    _install_example(site)
    # The docs name it echochat; installed under another name it would be refused.
    info = site / "lore_echochat-0.1.dist-info" / "entry_points.txt"
    info.write_text(f"[{GROUP}]\nechochat = lore_echochat:PLUGIN\n")
    monkeypatch.syspath_prepend(str(site))


def test_lores_own_channels_are_declared_as_entry_points_in_pyproject() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    assert project["project"]["entry-points"][GROUP] == BUILT_IN
    plugins = discover()
    assert set(BUILT_IN) <= set(plugins)
    for name, plugin in plugins.items():
        assert isinstance(plugin, ChannelPlugin) and plugin.name == name


def test_a_plugin_installed_under_another_name_is_one_clear_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = tmp_path / "site-packages"
    _install_example(site)  # declared as "echo", while the plugin says "echochat"
    monkeypatch.syspath_prepend(str(site))
    with pytest.raises(ConfigError, match="'echo' .* is not a ChannelPlugin named 'echo'"):
        discover()


def test_a_plugins_table_in_config_toml_is_kept_for_it_and_an_unclaimed_one_refused(
    home: Path, installed: None, model: ScriptedProvider, clock: FixedClock
) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(
        '[channels]\nunified_owner_session = false\n\n[channels.echochat]\ntoken = "s3cr3t-value"\n'
        'reply_url = "http://127.0.0.1:9/replies"\n\n[channels.ecochat]\ntoken = "typo"\n',
        encoding="utf-8",
    )
    config = load_config(env={"LORE_HOME": str(home), "USER": "john"}, flags={"model": "scripted"})
    assert config.channels.plugins["echochat"]["reply_url"] == "http://127.0.0.1:9/replies"
    assert config.redacted()["channels"]["plugins"]["echochat"]["token"] == "s3c…alue"
    lore = build(config, provider=model, clock=clock)
    try:
        with pytest.raises(ConfigError, match=r"\[channels.ecochat\] but no channel plugin"):
            Daemon(lore)
    finally:
        asyncio.run(lore.aclose())
    (home / "config.toml").write_text("[channels.echochat]\nreply_url = 3\nnested = {a = 1}\n")
    assert load_config(env={"LORE_HOME": str(home)}).channels.plugins["echochat"]["nested"]
    (home / "config.toml").write_text("[channels]\nunified_owner_sesion = true\n")
    with pytest.raises(ConfigError, match="unknown setting channels.'unified_owner_sesion'"):
        load_config(env={"LORE_HOME": str(home)})


async def test_lore_serve_connects_runs_and_delivers_through_a_plugin_channel(
    config: Config,
    installed: None,
    model: ScriptedProvider,
    clock: FixedClock,
    capsys: pytest.CaptureFixture[str],
) -> None:
    steps = [
        Step(tool_calls=[ToolCall("c1", "set_reminder",
                                  '{"text": "полить цветы", "when": "in 10 minutes"}')]),
        Step(text="好的，十分钟后提醒你。"),
    ]  # fmt: skip

    def script(request: ChatRequest) -> Step:
        return steps.pop(0) if steps else Step(text="[]")

    model.default = script
    with EchoService() as service:
        settings = {"token": TOKEN, "reply_url": f"{service.base_url}/replies"}
        config = replace(config, channels=replace(config.channels, plugins={"echochat": settings}))
        lore = build(config, provider=model, clock=clock)
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.bind(("127.0.0.1", 0))
        sock.listen(16)
        daemon = Daemon(lore, listener=sock)
        [channel] = daemon.channels
        assert isinstance(channel, Channel) and channel.name == "echochat"
        try:
            daemon.start()
            assert daemon._server is not None
            for _ in range(3000):  # up to 30 s for uvicorn to listen
                if daemon._server.started:
                    break
                await asyncio.sleep(0.01)
            url = f"http://127.0.0.1:{sock.getsockname()[1]}/echochat/messages"
            message = {"id": "m-1", "chat": "family", "chat_name": "Семья 家", "from": "Amy",
                       "text": "напомни полить цветы через 10 минут"}  # fmt: skip
            async with httpx.AsyncClient(timeout=30) as client:
                forged = await client.post(url, json=message, headers={"x-echochat-token": "x"})
                first = await client.post(url, json=message, headers={"x-echochat-token": TOKEN})
                again = await client.post(url, json=message, headers={"x-echochat-token": TOKEN})
            assert (forged.status_code, first.status_code, again.status_code) == (401, 200, 200)
            [reply] = await asyncio.to_thread(service.wait_sent, 1)
            assert reply == {"chat": "family", "text": "好的，十分钟后提醒你。"}
            await channel.drain()
            names = lore.chat_ledger.conversation_names()
            assert names["echochat:family"].name == "Семья 家"

            delivered = await daemon.scheduler.run_once(clock.now() + timedelta(minutes=11))
            assert len(delivered) == 1
            sent = await asyncio.to_thread(service.wait_sent, 2)
            assert sent[1]["chat"] == "family" and "полить цветы" in sent[1]["text"]
            assert len(sent) == 2  # the redelivered message was answered once
        finally:
            daemon.stop()
            await daemon.aclose()
            sock.close()
    err = capsys.readouterr().err
    assert "lore serve: chat channels connected: echochat (webhook at /echochat/messages)" in err
    assert "echochat (webhook at /echochat/messages)" in docs_text()
