"""The Discord channel: a bot over the gateway (no public address needed), one conversation
per text channel, thread or DM.

A message becomes an `Inbound` for `discord:<channel id>` (a thread is a channel of its
own, so its own conversation) or, in a DM, `discord:dm:<user id>`; its author the
sender's display name (the server nickname, else their global name). In a DM Lore
answers the owner (and anyone on the `allow` list, as a guest); a stranger gets one
polite line and nothing is stored. In a server channel Lore answers when it is addressed
(a mention of the bot, a reply to one of its messages, a /command typed as text, or the
`/lore` slash command) and otherwise only keeps the message in the conversation, so the
context is there when someone asks. Replies go out as replies to the message, split at
Discord's 2,000 characters, with every mention in them disarmed. Reminders come back to
the channel they were set in, with a real `<@id>` mention of whoever set them. The owner
approves a tool by a button under the question (or by replying y / n).

Every message is recorded in the chat ledger by its Discord id before its turn starts:
one seen again (a replay after RESUME, a restart) is dropped, and one whose turn a crash
cut short is handled by the next `lore serve` (`lore.channels.chat_inbox`). discord.py
keeps the gateway: heartbeats, reconnects, RESUME after a drop (Discord then replays
what was missed), and 429s waited out as `retry_after` says.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from lore.channels.chat_approval import ChatApprovals
from lore.channels.chat_inbox import ChatInbox, in_conversation
from lore.channels.message_split import split_message
from lore.config import OWNER_SCOPE
from lore.core.commands import is_command
from lore.errors import ConfigError, InvalidInputError, quoted
from lore.events import Inbound, ReplyFailed, Trust
from lore.health import HEALTH
from lore.metrics import METRICS
from lore.reminders.delivery import reminder_line
from lore.scope import Scope
from lore.text import one_line

if TYPE_CHECKING:
    import discord

    from lore.channels.discord_api import Bot, Said
    from lore.config import DiscordConfig
    from lore.ports.chat_ledger import Received
    from lore.reminders.delivery import Delivery
    from lore.runtime import Runtime

__all__ = ["MAX_MESSAGE", "SORRY", "STRANGER", "DiscordChannel", "scope_of"]

log = logging.getLogger(__name__)

MAX_MESSAGE = 2000  # Discord's limit for one message's content
STRANGER = "This assistant is private: it answers its owner only. Nothing you wrote was kept."
SORRY = "Sorry, I could not answer that just now."


def scope_of(said: Said) -> str:
    """The conversation key of where a message was written."""
    if said.direct:
        return str(Scope("discord", "dm", said.author_id))
    return str(Scope("discord", "", said.channel_id))


class DiscordChannel:
    def __init__(self, lore: Runtime, settings: DiscordConfig) -> None:
        self.lore = lore
        self.settings = settings
        self._bot: Bot | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._last: dict[str, asyncio.Future[None]] = {}
        self.inbox = ChatInbox(lore.chat_ledger, "discord", lore.clock, holder=lore.lease_holder)
        self.approvals: ChatApprovals[str] = ChatApprovals(self._ask, "discord")
        self.gateway_url = ""
        self.ready = asyncio.Event()  # set once the bot is on the gateway

    def check_installed(self) -> None:
        """One clear line when discord.py is missing, before anything starts."""
        try:
            import discord  # noqa: F401
        except ImportError:
            from lore.extras import install_hint

            raise ConfigError(f"Discord needs discord.py: {install_hint('discord')}") from None

    @property
    def bot(self) -> Bot:
        if self._bot is None:
            from lore.channels.discord_api import Bot

            self._bot = Bot(self)
        return self._bot

    # -- the gateway ----------------------------------------------------------------------

    async def run_forever(self) -> None:
        """Log in, open the gateway and keep it until cancelled; a failing Discord is
        retried, never fatal (a refused token is said once, and Discord stays off)."""
        import discord

        from lore.channels.discord_api import point_at, point_gateway

        point_at(self.settings.api_base_url)
        keeper: asyncio.Task[None] | None = None
        delay = 1.0
        try:
            while True:
                try:
                    if not self.gateway_url:
                        await self.bot.login(self.settings.token)
                        self.gateway_url = await point_gateway(self.bot)
                    if keeper is None:  # what a stopped `lore serve` took but never handled
                        keeper = asyncio.create_task(self.inbox.keep(self.resume))
                    await self.bot.connect(reconnect=True)
                    return
                except discord.LoginFailure:
                    log.error("discord: the bot token was refused; Discord stays off")
                    HEALTH.channel("discord", "off: the bot token was refused")
                    return
                except discord.PrivilegedIntentsRequired:
                    log.error(
                        "discord: the Message Content intent is off; switch it on in the "
                        "Developer Portal (Bot, Privileged Gateway Intents)"
                    )
                    HEALTH.channel("discord", "off: the Message Content intent is not enabled")
                    return
                except Exception as exc:  # Discord down, or answering what it should not
                    log.warning("discord: connecting failed (%s); retrying in %.0f s", exc, delay)
                    METRICS.count("lore_channel_errors", channel="discord", what="receive")
                    HEALTH.channel("discord", f"retrying: {one_line(str(exc), 120)}")
                    await self._start_over()
                    await asyncio.sleep(delay)
                    delay = min(delay * 2, 60.0)
        finally:
            if keeper is not None:
                keeper.cancel()
                await asyncio.gather(keeper, return_exceptions=True)
            if self._bot is not None:
                await self._bot.close()
            await self.drain()

    async def _start_over(self) -> None:
        """A new bot, to log in again: a closed discord.py client cannot be reopened."""
        self.gateway_url = ""
        if self._bot is not None:
            await self._bot.close()
            self._bot = None

    async def on_ready(self) -> None:
        """On the gateway: after READY, and again after each RESUMED. The first time,
        what was written while no `lore serve` was connected is caught up on."""
        HEALTH.channel("discord", "connected (gateway)")
        if not self.ready.is_set():
            self.ready.set()
            await self.catch_up()

    async def catch_up(self) -> None:
        """Discord replays nothing to a new session: what people wrote in a known
        conversation after its last message Lore has is read from the channel's history
        (oldest first, a hundred at most) and handled as if it had just come; the ledger
        drops what was handled before."""
        import discord

        from lore.channels.discord_api import dm_channel, missed, said_of

        me = self.bot.user
        if me is None:
            return
        for scope, last in self._last_seen().items():
            parts = Scope.parse(scope)
            try:
                where = await dm_channel(self.bot, int(parts.id)) if parts.kind else int(parts.id)
                found = await missed(self.bot, where, last)
            except (discord.DiscordException, OSError) as exc:
                log.warning("discord: could not read what %s missed: %s", scope, exc)
                continue
            for message in found:
                said = said_of(message, me.id, self)
                # The history's messages name no server (any non-empty id says "not a
                # DM"), nor the server nickname: the name they had here is used.
                guild = "" if parts.kind else (said.guild_id or "unknown")
                name = self._name_in(scope, said.author_id) or said.author
                await self.on_said(replace(said, guild_id=guild, author=name), message)

    def _last_seen(self) -> dict[str, int]:
        """Each live Discord conversation (not the owner's shared one) and the id of the
        last message Lore has from it."""
        found: dict[str, int] = {}
        for scope in self.lore.sessions.live_keys():
            if not _is_discord(scope):
                continue
            for message in reversed(self.lore.session(scope).messages):
                known = str(message.get("message_id") or "")
                if message.get("channel") == "discord" and known.isdigit():
                    found[scope] = int(known)
                    break
        return found

    def _name_in(self, scope: str, author_id: str) -> str:
        """The name a person had in this conversation, from what they said."""
        for message in reversed(self.lore.session(scope).messages):
            if message.get("author_id") == author_id and message.get("author"):
                return str(message["author"])
        return ""

    def on_disconnect(self) -> None:
        HEALTH.channel("discord", "reconnecting (gateway)")

    async def drain(self) -> None:
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    # -- inbound --------------------------------------------------------------------------

    def sent_by_lore(self, message_id: str) -> bool:
        return self.inbox.was_sent(message_id)

    async def on_said(self, said: Said, message: discord.Message) -> None:
        """A message from the gateway: recorded in the ledger (one seen before is
        dropped), then handed to the bus."""
        if not self.inbox.receive(said.message_id, said.payload()):
            return  # replayed after a RESUME or a restart: answered once already
        await self.handle(said)

    async def on_command(self, said: Said, interaction: discord.Interaction[Any]) -> None:
        """The slash command: acknowledged at once ("Lore is thinking…"), answered in
        that response when the turn is done."""
        import discord

        if not self.inbox.receive(said.message_id, said.payload()):
            return
        try:
            await interaction.response.defer(thinking=True)
        except discord.HTTPException as exc:  # too late (3 s): answered in the channel
            log.warning("discord: the slash command could not be acknowledged: %s", exc)
            await self.handle(said)
            return
        await self.handle(said, interaction=interaction)

    async def resume(self, received: Received) -> None:
        """Handle a message a process that stopped took but never handled."""
        from lore.channels.discord_api import Said

        try:
            said = Said.of_payload(received.payload)
        except (KeyError, TypeError, ValueError):
            log.warning("discord: update %s cannot be read; dropped", received.key)
            self.inbox.handled(received.key)
            return
        await self.handle(said, replayed=True)

    async def handle(
        self,
        said: Said,
        *,
        replayed: bool = False,
        interaction: discord.Interaction[Any] | None = None,
    ) -> None:
        """Hand one message to the bus: recorded now, answered in the scope's queue; the
        ledger's key is marked handled once the message is in its conversation."""
        key = said.message_id
        try:
            where = scope_of(said)
        except InvalidInputError as exc:  # Discord's ids are numbers; this is not Discord
            log.warning("discord: message dropped: %s", exc)
            self.inbox.handled(key)
            return
        # The owner's DM may be part of the owner's one conversation across channels.
        scope = self.lore.config.conversation_scope(where)
        trust = self._trust(said.author_id, direct=said.direct)
        if trust is None:
            await self._say(said, STRANGER, interaction)
            self.inbox.handled(key)
            return
        if trust == "owner" and self.approvals.answer(said.channel_id, said.text):
            self.inbox.handled(key)
            return  # the owner answered a tool's "may I?"; not a message for the chat
        if replayed and in_conversation(self.lore, scope, "discord", said.message_id):
            self.inbox.handled(key)  # its turn ran before the process stopped
            return
        inbound = Inbound(
            scope=scope,
            channel="discord",
            author=said.author,
            text=said.text,
            trust=trust,
            message_id=said.message_id,
            author_id=said.author_id,
            respond=said.direct or said.addressed or is_command(said.text),
        )
        # Replies leave in the order the messages came: each waits for the one before.
        before = self._last.get(said.channel_id)
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._last[said.channel_id] = done
        task = asyncio.create_task(self._answer(inbound, said, before, done, interaction))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        await asyncio.sleep(0)  # the bus queues it now: the scope's order is arrival order

    def _trust(self, user_id: str, *, direct: bool) -> Trust | None:
        if user_id in self.settings.owner_ids:
            return "owner"
        if not direct:
            return "member"
        return "guest" if user_id in self.settings.allow else None

    async def _answer(
        self,
        inbound: Inbound,
        said: Said,
        before: asyncio.Future[None] | None,
        done: asyncio.Future[None],
        interaction: discord.Interaction[Any] | None,
    ) -> None:
        try:
            await self._reply(inbound, said, before, interaction)
        except Exception:  # one chat's failure never stops the others
            log.exception("discord: answering in %s failed", inbound.scope)
            METRICS.count("lore_channel_errors", channel="discord", what="send")
        finally:
            done.set_result(None)
            if self._last.get(said.channel_id) is done:
                del self._last[said.channel_id]
        # Not reached when cancelled (a stop, a crash): the next process handles it.
        self.inbox.handled(said.message_id)

    async def _reply(
        self,
        inbound: Inbound,
        said: Said,
        before: asyncio.Future[None] | None,
        interaction: discord.Interaction[Any] | None,
    ) -> None:
        try:
            # The owner can be asked, here in the chat, before a tool acts.
            approver = (
                self.approvals.for_chat(said.channel_id, inbound.author)
                if inbound.trust == "owner"
                else None
            )
            outcome = await self.lore.bus.send(inbound, approver=approver)
        except Exception:  # one chat's failure never stops the others
            log.exception("discord: the turn for %s failed", inbound.scope)
            METRICS.count("lore_channel_errors", channel="discord", what="turn")
            outcome = None
        if before is not None:
            await before
        if outcome is None:
            await self._say(said, SORRY, interaction)
            return
        if not inbound.respond and outcome.command is None:
            return  # kept in the conversation; a "yes" to a question of theirs is answered
        text = outcome.text
        if not text and any(isinstance(e, ReplyFailed) for e in outcome.events):
            text = SORRY
        if text:
            await self._say(said, text, interaction)

    # -- outbound -------------------------------------------------------------------------

    async def _say(
        self, said: Said, text: str, interaction: discord.Interaction[Any] | None
    ) -> None:
        """Answer a message: as a reply to it in a server, plainly in a DM, as the
        response of a slash command."""
        from lore.channels.discord_api import send_text

        pieces = split_message(text, MAX_MESSAGE)
        if interaction is not None:
            import discord

            first = await interaction.followup.send(
                pieces[0], wait=True, allowed_mentions=discord.AllowedMentions.none()
            )
            self._note_sent([str(first.id)])
            pieces = pieces[1:]
            if not pieces:
                return
        reply_to = (
            int(said.message_id)
            if not said.direct and interaction is None and said.message_id.isdigit()
            else None
        )
        self._note_sent(await send_text(self.bot, int(said.channel_id), pieces, reply_to=reply_to))

    async def _ask(self, channel_id: str, question: str) -> None:
        """A tool's "may I?", with Allow / Refuse buttons under it."""
        from lore.channels.discord_api import ApprovalButtons, send_text

        buttons = ApprovalButtons(
            self.settings.owner_ids,
            lambda answer: self.approvals.answer(channel_id, answer),
            timeout=self.lore.config.tools.approval_timeout,
        )
        pieces = split_message(question, MAX_MESSAGE)
        self._note_sent(await send_text(self.bot, int(channel_id), pieces, view=buttons))

    def _note_sent(self, ids: list[str]) -> None:
        try:
            self.inbox.sent(ids)
        except Exception:  # it was sent: only a later reply to it may go unrecognised
            log.exception("discord: could not note the ids of messages sent")

    async def deliver(self, due: Delivery) -> None:
        """A reminder, back to the channel it was set in, with a real mention of who set
        it (that person alone is pinged). Raises when Discord refuses, so the scheduler
        retries it."""
        from lore.channels.discord_api import dm_channel, send_text

        pieces: list[str]
        if due.scope == OWNER_SCOPE:  # the owner's one conversation: their own DM
            if not self.settings.owner_ids:
                raise ConfigError("Discord knows no owner to write to: set discord.owner_ids")
            channel_id = await dm_channel(self.bot, int(self.settings.owner_ids[0]))
            pieces, mention = split_message(reminder_line(due, mention=""), MAX_MESSAGE), None
        else:
            parts = _parts(due.scope)
            if parts.kind == "dm":
                channel_id = await dm_channel(self.bot, int(parts.id))
                text, mention = reminder_line(due, mention=""), None
            else:
                channel_id = int(parts.id)
                user_id = self._author_id(due.scope, due.author)
                mention = int(user_id) if user_id.isdigit() else None
                text = reminder_line(due, f"<@{user_id}>" if mention is not None else None)
            pieces = split_message(text, MAX_MESSAGE)
        self._note_sent(await send_text(self.bot, channel_id, pieces, mention=mention))

    def _author_id(self, scope: str, author: str) -> str:
        """The Discord id of the person named `author` here, from what they said."""
        for message in reversed(self.lore.session(scope).messages):
            if message.get("author") == author and message.get("author_id"):
                return str(message["author_id"])
        return ""


def _parts(scope: str) -> Scope:
    """The parts of a Discord conversation key; InvalidInputError for another key."""
    parts = Scope.parse(scope)
    if parts.channel != "discord" or not (parts.id.isascii() and parts.id.isdigit()):
        raise InvalidInputError(f"{quoted(scope)} is not a Discord conversation key")
    return parts


def _is_discord(scope: str) -> bool:
    try:
        _parts(scope)
    except InvalidInputError:
        return False
    return True
