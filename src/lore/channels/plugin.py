"""Chat channels as plugins: how `lore serve` finds the channels it runs.

A channel is an entry point in the `lore.channels` group whose name is the channel's
(the first part of its conversation keys) and whose object is a `ChannelPlugin`:

    [project.entry-points."lore.channels"]
    mychat = "lore_mychat:PLUGIN"

Lore's own channels (Telegram, LINE, Discord, Slack, WhatsApp) are declared the same way in its
`pyproject.toml`; `BUILT_IN` names them too, so a checkout run from source, whose
installed metadata may predate them, still finds them. `lore serve` opens every channel
whose token is set (`ChannelPlugin.configured`), mounts its webhook routes on the
gateway, routes the reminders of its conversations to its `deliver`, runs it, and says
in one line which channels are connected. A channel from another package keeps its
settings in `config.toml` under `[channels.<name>]` (`plugin_settings`).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from importlib.metadata import EntryPoint, entry_points
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from lore.errors import ConfigError

if TYPE_CHECKING:
    from fastapi import APIRouter

    from lore.config import Config
    from lore.reminders.delivery import Delivery
    from lore.runtime import Runtime

__all__ = [
    "BUILT_IN",
    "GROUP",
    "Channel",
    "ChannelPlugin",
    "discover",
    "open_channels",
    "plugin_settings",
]

log = logging.getLogger(__name__)

GROUP = "lore.channels"
# Lore's own channels, as its pyproject.toml declares them (a test holds the two equal).
BUILT_IN: dict[str, str] = {
    "telegram": "lore.channels.telegram:PLUGIN",
    "line": "lore.channels.line:PLUGIN",
    "discord": "lore.channels.discord:PLUGIN",
    "slack": "lore.channels.slack:PLUGIN",
    "whatsapp": "lore.channels.whatsapp:PLUGIN",
}


@runtime_checkable
class Channel(Protocol):
    """A chat channel running inside `lore serve`."""

    name: str  # its conversation keys start with it: "line", "mychat"

    @property
    def reaches_owner(self) -> bool:
        """Can it push to the owner 1:1 (the owner's ids are configured)? Then the owner's
        one conversation may get its reminders through it."""

    def describe(self) -> str:
        """How it is connected, for the start-up line: "long polling", "webhook at /x"."""

    def routes(self) -> APIRouter | None:
        """Its webhook routes for the gateway, or None when it needs none."""

    async def run_forever(self) -> None:
        """Receive until cancelled (poll, keep a socket, or answer what a stopped process
        left unhandled); a failing platform is retried, never fatal."""

    async def deliver(self, due: Delivery) -> None:
        """Push a due reminder to the conversation it was set in; raise when the platform
        refuses, so the scheduler retries it and in the end shows it failed."""

    async def drain(self) -> None:
        """Wait for the replies in hand."""

    async def aclose(self) -> None:
        """Finish the replies in hand and release its clients."""


@runtime_checkable
class ChannelPlugin(Protocol):
    """What a `lore.channels` entry point names."""

    name: str  # the entry point's name and the channel's
    section: str  # its table in config.toml: "line", or "channels.mychat" for a plugin

    def configured(self, config: Config) -> bool:
        """Is its token set? Only then does `lore serve` open it."""

    def open(self, lore: Runtime) -> Channel:
        """The channel for this runtime, not started; ConfigError (one line) when its
        client library is missing or its settings cannot work."""


def plugin_settings(config: Config, name: str) -> Mapping[str, Any]:
    """The `[channels.<name>]` table of config.toml (empty when there is none): where a
    channel from another package keeps its token and options."""
    return config.channels.plugins.get(name, {})


def discover() -> dict[str, ChannelPlugin]:
    """Every installed channel plugin by name: the `lore.channels` entry points, and
    Lore's own where the installed metadata does not declare them. A plugin that cannot
    be loaded is one ConfigError line naming it."""
    found: dict[str, EntryPoint] = {
        name: EntryPoint(name, value, GROUP) for name, value in BUILT_IN.items()
    }
    for point in entry_points(group=GROUP):
        found[point.name] = point
    plugins: dict[str, ChannelPlugin] = {}
    for name, point in found.items():
        try:
            plugin = point.load()
        except Exception as exc:  # a broken plugin names itself, never a traceback
            raise ConfigError(
                f"the channel plugin {name!r} ({point.value}) cannot be loaded: {exc}"
            ) from None
        if not isinstance(plugin, ChannelPlugin) or plugin.name != name:
            raise ConfigError(
                f"the channel plugin {name!r} ({point.value}) is not a ChannelPlugin named {name!r}"
            )
        plugins[name] = plugin
    return plugins


def open_channels(lore: Runtime) -> list[Channel]:
    """The channels whose token is set, opened (not started), in discovery order; a
    `[channels.<name>]` table no installed plugin claims is a ConfigError."""
    plugins = discover()
    unclaimed = sorted(set(lore.config.channels.plugins) - set(plugins))
    if unclaimed:
        raise ConfigError(
            f"config.toml has [channels.{unclaimed[0]}] but no channel plugin named "
            f"{unclaimed[0]!r} is installed (installed: {', '.join(sorted(plugins))})"
        )
    return [plugin.open(lore) for plugin in plugins.values() if plugin.configured(lore.config)]
