"""What the Discord channel asks of discord.py: the bot over the gateway, with the intents
it needs (messages in servers and DMs, and their content), the `/lore` slash command, the
Allow / Refuse buttons of an approval, and sending text where it should go.

discord.py talks to the REST API at `Route.BASE` and opens the gateway where
`GET /gateway/bot` says; both are set from `discord.api_base_url` before the bot logs in,
so a local Discord (the tests' fake) is reached exactly as the real one. A 429 is waited
out and retried by discord.py itself (it reads `retry_after`); a dropped gateway is
reconnected and RESUMEd, and what Discord replays is deduplicated by the chat ledger.

Only imported when Discord is configured and discord.py is installed (the `discord` extra).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import discord
import yarl
from discord import app_commands
from discord.gateway import DiscordWebSocket
from discord.http import Route

__all__ = [
    "MAX_MESSAGE",
    "ApprovalButtons",
    "Bot",
    "Events",
    "Said",
    "dm_channel",
    "missed",
    "point_at",
    "point_gateway",
    "said_of",
    "send_text",
]

log = logging.getLogger(__name__)

MAX_MESSAGE = 2000  # Discord's limit for one message's content
COMMAND = "lore"  # the slash command: /lore text:<what to say>


@dataclass(frozen=True)
class Said:
    """One message as Lore reads it, from the gateway or from the ledger after a restart
    (its `payload`): who wrote what where, and whether it was said to Lore."""

    message_id: str
    channel_id: str  # where it was written, and where the answer goes
    guild_id: str  # "" for a direct message
    author_id: str
    author: str  # the display name: the server nickname, else the global name, else the user name
    text: str  # without the mention of the bot
    addressed: bool  # a mention, a reply to Lore, or the slash command
    interaction: bool = False  # came as the slash command (its answer is the response)

    @property
    def direct(self) -> bool:
        return not self.guild_id

    def payload(self) -> dict[str, Any]:
        return {
            "message_id": self.message_id,
            "channel_id": self.channel_id,
            "guild_id": self.guild_id,
            "author_id": self.author_id,
            "author": self.author,
            "text": self.text,
            "addressed": self.addressed,
            "interaction": self.interaction,
        }

    @classmethod
    def of_payload(cls, data: dict[str, Any]) -> Said:
        return cls(
            message_id=str(data["message_id"]),
            channel_id=str(data["channel_id"]),
            guild_id=str(data.get("guild_id") or ""),
            author_id=str(data["author_id"]),
            author=str(data["author"]),
            text=str(data["text"]),
            addressed=bool(data.get("addressed")),
            interaction=bool(data.get("interaction")),
        )


class Events(Protocol):
    """Where the bot hands on what happens (the Discord channel)."""

    async def on_ready(self) -> None: ...

    def on_disconnect(self) -> None: ...

    async def on_said(self, said: Said, message: discord.Message) -> None: ...

    async def on_command(self, said: Said, interaction: discord.Interaction[Any]) -> None: ...

    def sent_by_lore(self, message_id: str) -> bool: ...


def point_at(api_base_url: str) -> None:
    """Talk to the REST API at this address (discord.py keeps it on its `Route` class)."""
    Route.BASE = api_base_url.rstrip("/")


async def point_gateway(client: discord.Client) -> str:
    """Open the gateway where `GET /gateway/bot` says (and come back there after an
    INVALID_SESSION); the address."""
    _, url, _ = await client.http.get_bot_gateway()
    DiscordWebSocket.DEFAULT_GATEWAY = yarl.URL(url)
    return url


def intents() -> discord.Intents:
    """Servers, their messages and DMs, and the messages' content (a privileged intent:
    switched on in the Developer Portal, or the gateway closes with 4014)."""
    wanted = discord.Intents.none()
    wanted.guilds = True
    wanted.guild_messages = True
    wanted.dm_messages = True
    wanted.message_content = True
    return wanted


class Bot(discord.Client):
    """The bot: every message goes to `events`; `/lore` is registered when it logs in."""

    def __init__(self, events: Events) -> None:
        super().__init__(intents=intents(), enable_debug_events=False)
        self.events = events
        self.tree = app_commands.CommandTree(self)
        self.tree.add_command(_lore_command)

    async def setup_hook(self) -> None:
        await self.tree.sync()  # PUT /applications/{id}/commands: /lore appears in Discord

    async def close(self) -> None:
        # READY waits for the servers' GUILD_CREATEs in a task of discord.py's own,
        # which fails on a closed client: stopping it first keeps a stop quiet.
        ready: asyncio.Task[None] | None = getattr(self._connection, "_ready_task", None)
        if ready is not None:
            ready.cancel()
        await super().close()

    async def on_ready(self) -> None:
        await self.events.on_ready()

    async def on_resumed(self) -> None:
        await self.events.on_ready()

    async def on_disconnect(self) -> None:
        self.events.on_disconnect()

    async def on_guild_join(self, guild: discord.Guild) -> None:
        """The owner finds a new server's conversations by its name in the log."""
        channels = ", ".join(f"#{c.name} discord:{c.id}" for c in guild.text_channels)
        log.info("discord: Lore joined the server %r; its channels: %s", guild.name, channels)

    async def on_message(self, message: discord.Message) -> None:
        if self.user is None or message.author.id == self.user.id or message.author.bot:
            return
        if message.type not in (discord.MessageType.default, discord.MessageType.reply):
            return
        await self.events.on_said(said_of(message, self.user.id, self.events), message)

    async def command(self, interaction: discord.Interaction[Any], text: str) -> None:
        user = interaction.user
        said = Said(
            message_id=f"interaction:{interaction.id}",
            channel_id=str(interaction.channel_id or ""),
            guild_id=str(interaction.guild_id or ""),
            author_id=str(user.id),
            author=_name(user),
            text=text.strip(),
            addressed=True,
            interaction=True,
        )
        await self.events.on_command(said, interaction)


@app_commands.command(name=COMMAND, description="Say something to Lore")
@app_commands.describe(text="What to say (Lore answers here)")
async def _lore_command(interaction: discord.Interaction[Any], text: str) -> None:
    bot = interaction.client
    if isinstance(bot, Bot):
        await bot.command(interaction, text)


def said_of(message: discord.Message, me: int, events: Events) -> Said:
    """What Lore reads in a message: its text without the bot's mention, and whether it
    was said to Lore (a mention of the bot, or a reply to one of its messages)."""
    text = message.content
    for form in (f"<@{me}>", f"<@!{me}>"):
        text = text.replace(form, "")
    mentioned = any(user.id == me for user in message.mentions)
    reference = message.reference
    replied = False
    if reference is not None and reference.message_id is not None:
        resolved = reference.resolved
        if isinstance(resolved, discord.Message):
            replied = resolved.author.id == me
        replied = replied or events.sent_by_lore(str(reference.message_id))
    return Said(
        message_id=str(message.id),
        channel_id=str(message.channel.id),
        guild_id=str(message.guild.id) if message.guild is not None else "",
        author_id=str(message.author.id),
        author=_name(message.author),
        text=" ".join(text.split()) if mentioned else text.strip(),
        addressed=mentioned or replied,
    )


def _name(user: discord.User | discord.Member) -> str:
    return " ".join(user.display_name.split()) or user.name or str(user.id)


async def send_text(
    client: discord.Client,
    channel_id: int,
    pieces: Sequence[str],
    *,
    reply_to: int | None = None,
    mention: int | None = None,
    view: discord.ui.View | None = None,
) -> list[str]:
    """Send the pieces in order, the first as a reply to `reply_to`; only `mention` may be
    pinged (nobody else, whatever the text says); the ids of the messages sent."""
    where = client.get_partial_messageable(channel_id)
    allowed = (
        discord.AllowedMentions(users=[discord.Object(mention)], roles=False, everyone=False)
        if mention is not None
        else discord.AllowedMentions.none()
    )
    ids: list[str] = []
    for number, piece in enumerate(pieces):
        first, last = number == 0, number == len(pieces) - 1
        reference = (
            discord.MessageReference(
                message_id=reply_to, channel_id=channel_id, fail_if_not_exists=False
            )
            if first and reply_to is not None
            else None
        )
        kwargs: dict[str, Any] = {"allowed_mentions": allowed}
        if reference is not None:
            kwargs["reference"] = reference
        if view is not None and last:
            kwargs["view"] = view
        sent = await where.send(piece, **kwargs)
        ids.append(str(sent.id))
    return ids


async def missed(
    client: discord.Client, channel_id: int, after: int, *, limit: int = 100
) -> list[discord.Message]:
    """What people wrote in a channel after message `after`, oldest first (at most
    `limit`): `GET /channels/{id}/messages?after=…`."""
    where = client.get_channel(channel_id) or client.get_partial_messageable(channel_id)
    if not isinstance(where, discord.abc.Messageable):
        return []
    found = where.history(limit=limit, after=discord.Object(after), oldest_first=True)
    return [message async for message in found if not message.author.bot]


async def dm_channel(client: discord.Client, user_id: int) -> int:
    """The id of the DM channel with this user (opened if need be)."""
    data = await client.http.start_private_message(user_id)
    return int(data["id"])


class ApprovalButtons(discord.ui.View):
    """Allow / Refuse under a "May I …?": a press by one of `owners` answers it."""

    def __init__(
        self, owners: Sequence[str], answer: Callable[[str], bool], timeout: float
    ) -> None:
        super().__init__(timeout=timeout)
        self.owners = tuple(owners)
        self.answer = answer

    @discord.ui.button(label="Allow", style=discord.ButtonStyle.success)
    async def allow(
        self, interaction: discord.Interaction[Any], button: discord.ui.Button[Any]
    ) -> None:
        await self._pressed(interaction, "yes", "Allowed")

    @discord.ui.button(label="Refuse", style=discord.ButtonStyle.danger)
    async def refuse(
        self, interaction: discord.Interaction[Any], button: discord.ui.Button[Any]
    ) -> None:
        await self._pressed(interaction, "no", "Refused")

    async def _pressed(self, interaction: discord.Interaction[Any], answer: str, done: str) -> None:
        if str(interaction.user.id) not in self.owners:
            await interaction.response.send_message(
                "Only the owner can answer this.", ephemeral=True
            )
            return
        answered = self.answer(answer)
        self.stop()
        message = interaction.message
        content = message.content if message is not None else ""
        outcome = f"{done} by {_name(interaction.user)}." if answered else "Already answered."
        await interaction.response.edit_message(content=f"{content}\n\n{outcome}", view=None)
