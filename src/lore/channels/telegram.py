"""The Telegram channel: long polling (no public address needed), one conversation per chat.

Each message becomes an `Inbound` for scope `telegram:<chat_id>`, its sender the author.
In a 1:1 chat Lore answers the owner (and anyone on the `allow` list, as a guest); a
stranger gets one polite line and nothing is stored. In a group Lore answers when it is
addressed (a mention, a reply to one of its messages, or a /command) and otherwise only
keeps the message in the conversation, so the context is there when someone asks.
Replies are plain text (nothing to escape, nothing to break), split at Telegram's 4,096
characters. Reminders come back to the chat they were set in, mentioning whoever set them.
A failed getUpdates is retried with backoff; an update is only confirmed (by asking for
the next offset) once it was handed on, so an outage loses nothing.

With `webhook_url` set, Telegram posts the updates to the gateway instead
(`lore.channels.telegram_webhook`): the channel registers the address with setWebhook
when it starts, and long polling deletes it again. Both ways end in `accept`, which
records the update in the chat ledger before it is confirmed (the webhook's 200, the
next offset) and drops one it has already taken, after a restart too (Telegram
redelivers what it thinks was lost). An update whose turn a crash cut short is handled
by the next `lore serve` (`lore.channels.chat_inbox`).
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from lore.channels.chat_inbox import ChatInbox, in_conversation
from lore.channels.message_split import split_message as split_pieces
from lore.channels.message_split import utf16_len as _units
from lore.channels.names import ConversationNames
from lore.channels.telegram_approval import TelegramApprovals
from lore.config import OWNER_SCOPE
from lore.errors import InvalidInputError, LoreError, quoted
from lore.events import Inbound, ReplyFailed, Trust
from lore.health import HEALTH
from lore.metrics import METRICS
from lore.reminders.delivery import mention_for, reminder_line
from lore.scope import Scope
from lore.text import one_line

if TYPE_CHECKING:
    from fastapi import APIRouter
    from telegram import Bot, Message, Update

    from lore.config import Config, TelegramConfig
    from lore.ports.chat_ledger import Received
    from lore.reminders.delivery import Delivery
    from lore.runtime import Runtime

__all__ = ["MAX_MESSAGE", "PLUGIN", "TelegramChannel", "split_message"]

log = logging.getLogger(__name__)

MAX_MESSAGE = 4096  # Telegram's limit for one message, in UTF-16 code units
STRANGER = "This assistant is private: it answers its owner only. Nothing you wrote was kept."
UPDATES = ["message"]  # the kinds of update Lore asks Telegram for


def split_message(text: str, limit: int = MAX_MESSAGE) -> list[str]:
    """Pieces of at most `limit` UTF-16 units, cut at a paragraph, line or space if any."""
    return split_pieces(text, limit)


class TelegramChannel:
    name = "telegram"

    def __init__(self, lore: Runtime, settings: TelegramConfig, *, bot: Bot | None = None):
        self.lore = lore
        self.settings = settings
        self._bot = bot
        self._stopping = asyncio.Event()
        self._tasks: set[asyncio.Task[None]] = set()
        self._last_reply: dict[int, asyncio.Future[None]] = {}
        self.me_id = 0
        self.me_username = ""
        self.approvals = TelegramApprovals(self._send)
        self.inbox = ChatInbox(lore.chat_ledger, "telegram", lore.clock, holder=lore.lease_holder)
        self.ready = asyncio.Event()  # set once the bot knows itself and its webhook is set
        self.names = ConversationNames(lore, "telegram")

    def check_installed(self) -> None:
        """One clear line when the Telegram client is missing, before anything starts."""
        try:
            import telegram  # noqa: F401
        except ImportError:
            from lore.errors import ConfigError
            from lore.extras import install_hint

            raise ConfigError(
                f"Telegram needs python-telegram-bot: {install_hint('telegram')}"
            ) from None

    @property
    def bot(self) -> Bot:
        if self._bot is None:
            from telegram import Bot

            base = self.settings.base_url.rstrip("/")
            self._bot = Bot(
                self.settings.token, base_url=f"{base}/bot", base_file_url=f"{base}/file/bot"
            )
        return self._bot

    @property
    def reaches_owner(self) -> bool:
        return bool(self.settings.owner_ids)

    def describe(self) -> str:
        return "webhook at /telegram/webhook" if self.settings.webhook_url else "long polling"

    def routes(self) -> APIRouter | None:
        """The webhook route, when Telegram posts the updates instead of being polled."""
        if not self.settings.webhook_url:
            return None
        from lore.channels.telegram_webhook import telegram_router

        return telegram_router(self)

    async def aclose(self) -> None:
        self.stop()
        await self.drain()

    # -- polling --------------------------------------------------------------------------

    async def run_forever(self) -> None:
        """Poll for updates until `stop()`; a failing Telegram is retried, never fatal."""
        await self._start()
        # Updates a process that died (this one, before a restart) took but never handled.
        keeper = asyncio.create_task(self.inbox.keep(self.resume), name="telegram-inbox")
        try:
            await self._receive_updates()
        finally:
            keeper.cancel()
            await asyncio.gather(keeper, return_exceptions=True)
        await self.drain()

    async def _receive_updates(self) -> None:
        from telegram.error import RetryAfter, TelegramError

        if self.settings.webhook_url:  # the gateway's webhook route brings the updates
            await self._stopping.wait()
            return
        offset: int | None = None
        delay = 1.0
        while not self._stopping.is_set():
            try:
                updates = await self.bot.get_updates(
                    offset=offset,
                    timeout=self.settings.poll_seconds,
                    allowed_updates=UPDATES,
                    read_timeout=self.settings.poll_seconds + 10,
                )
            except RetryAfter as exc:
                await self._pause(float(_seconds(exc.retry_after)))
                continue
            except TelegramError as exc:
                log.warning("telegram: getUpdates failed (%s); retrying in %.0f s", exc, delay)
                METRICS.count("lore_channel_errors", channel="telegram", what="receive")
                HEALTH.channel("telegram", f"retrying: {one_line(str(exc), 120)}")
                await self._pause(delay)
                delay = min(delay * 2, 60.0)
                continue
            if delay > 1.0:
                HEALTH.channel("telegram", "connected (long polling)")
            delay = 1.0
            for update in updates:
                try:
                    await self.accept(update)
                except LoreError as exc:  # not recorded: not confirmed, Telegram sends it again
                    log.warning("telegram: could not record an update (%s); retrying", exc)
                    await self._pause(delay)
                    break
                offset = update.update_id + 1  # confirmed by the next getUpdates

    async def _start(self) -> None:
        """Learn who the bot is (to see mentions and replies to it) and set or delete the
        webhook (getUpdates is refused while one is set), retrying until done."""
        from telegram.error import TelegramError

        delay = 1.0
        while not self._stopping.is_set():
            try:
                me = await self.bot.get_me()
                self.me_id, self.me_username = me.id, me.username or ""
                if self.settings.webhook_url:
                    await self.bot.set_webhook(
                        self.settings.webhook_url,
                        secret_token=self.settings.webhook_secret,
                        allowed_updates=UPDATES,
                    )
                else:
                    await self.bot.delete_webhook()
            except TelegramError as exc:
                log.warning("telegram: starting failed (%s); retrying in %.0f s", exc, delay)
                HEALTH.channel("telegram", f"retrying: {one_line(str(exc), 120)}")
                await self._pause(delay)
                delay = min(delay * 2, 60.0)
                continue
            how = "webhook" if self.settings.webhook_url else "long polling"
            HEALTH.channel("telegram", f"connected ({how})")
            self.ready.set()
            return

    async def _pause(self, seconds: float) -> None:
        try:
            await asyncio.wait_for(self._stopping.wait(), timeout=seconds)
        except TimeoutError:
            pass

    def stop(self) -> None:
        self._stopping.set()

    async def drain(self) -> None:
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    # -- inbound --------------------------------------------------------------------------

    async def accept(self, update: Update) -> bool:
        """Record an update, polled or posted to the webhook, in the ledger, then handle
        it; False for one taken before (a redelivery)."""
        key = str(update.update_id)
        if not self.inbox.receive(key, update.to_dict()):
            return False
        await self.handle(update, key)
        return True

    async def resume(self, received: Received) -> None:
        """Handle an update a process that stopped took but never handled."""
        from telegram import Update

        update = Update.de_json(received.payload, self.bot)
        if update is None:
            self.inbox.handled(received.key)
            return
        await self.handle(update, received.key, replayed=True)

    async def handle(self, update: Update, key: str = "", *, replayed: bool = False) -> None:
        """Hand one update to the bus: recorded now, answered in the scope's queue; the
        ledger's `key` is marked handled once the message is in its conversation."""
        message = update.message
        if message is None or message.from_user is None:
            self.inbox.handled(key)
            return
        sender = message.from_user
        chat = message.chat
        try:
            key_of_chat = str(Scope("telegram", "", str(chat.id)))
        except InvalidInputError as exc:  # Telegram's ids are numbers; this is not Telegram
            log.warning("telegram: update dropped: %s", exc)
            self.inbox.handled(key)
            return
        self._name_chat(message, key_of_chat)
        if message.text is None:
            self.inbox.handled(key)
            return
        # The owner's 1:1 chat may be part of the owner's one conversation across channels.
        scope = self.lore.config.conversation_scope(key_of_chat)
        private = chat.type == "private"
        trust = self._trust(str(sender.id), private=private)
        if trust is None:
            await self._send(chat.id, STRANGER)
            self.inbox.handled(key)
            return
        if trust == "owner" and self.approvals.answer(chat.id, message.text):
            self.inbox.handled(key)
            return  # the owner answered a tool's "may I?"; not a message for the chat
        if replayed and in_conversation(self.lore, scope, "telegram", str(message.message_id)):
            self.inbox.handled(key)  # its turn ran before the process stopped
            return
        inbound = Inbound(
            scope=scope,
            channel="telegram",
            author=sender.full_name or sender.username or str(sender.id),
            text=self._text(message),
            trust=trust,
            message_id=str(message.message_id),
            author_id=str(sender.id),
            respond=private or self._addressed(message),
        )
        # Replies leave in the order the messages came: each waits for the one before.
        before = self._last_reply.get(chat.id)
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._last_reply[chat.id] = done
        task = asyncio.create_task(self._answer(inbound, message, before, done, key))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        await asyncio.sleep(0)  # the bus queues it now: the scope's order is arrival order

    def _name_chat(self, message: Message, scope: str) -> None:
        """Keep the chat's name: a group's title (new on a rename), the other person's
        name in a 1:1 chat; and say so when the bot was added to a group."""
        chat = message.chat
        if chat.type == "private":
            sender = message.from_user
            if sender is not None:
                self.names.note(scope, sender.full_name or sender.username or "")
            return
        title = message.new_chat_title or chat.title or ""
        if any(member.id == self.me_id for member in message.new_chat_members or ()):
            self.names.joined(scope, title)
        else:
            self.names.note(scope, title)

    def _trust(self, user_id: str, *, private: bool) -> Trust | None:
        if user_id in self.settings.owner_ids:
            return "owner"
        if not private:
            return "member"
        return "guest" if user_id in self.settings.allow else None

    def _addressed(self, message: Message) -> bool:
        text = message.text or ""
        if text.startswith("/"):
            return True
        replied = message.reply_to_message
        if replied is not None and replied.from_user is not None:
            if replied.from_user.id == self.me_id:
                return True
        mention = f"@{self.me_username}".lower()
        return bool(self.me_username) and mention in text.lower()

    def _text(self, message: Message) -> str:
        """The text, without the bot's own @name (a /command@bot keeps working)."""
        text = message.text or ""
        if self.me_username:
            for form in (f"@{self.me_username}", f"@{self.me_username.lower()}"):
                text = text.replace(form, "")
        return " ".join(text.split()) if text.startswith("/") else text.strip()

    async def _answer(
        self,
        inbound: Inbound,
        message: Message,
        before: asyncio.Future[None] | None,
        done: asyncio.Future[None],
        key: str,
    ) -> None:
        try:
            await self._reply(inbound, message, before)
        except Exception:  # one chat's failure never stops the others
            log.exception("telegram: answering in %s failed", inbound.scope)
            METRICS.count("lore_channel_errors", channel="telegram", what="send")
        finally:
            done.set_result(None)
            if self._last_reply.get(message.chat.id) is done:
                del self._last_reply[message.chat.id]
        # Not reached when cancelled (a stop, a crash): the next process handles it.
        self.inbox.handled(key)

    async def _reply(
        self, inbound: Inbound, message: Message, before: asyncio.Future[None] | None
    ) -> None:
        try:
            # The owner can be asked, here in the chat, before a tool acts.
            approver = (
                self.approvals.for_chat(message.chat.id, inbound.author)
                if inbound.trust == "owner"
                else None
            )
            outcome = await self.lore.bus.send(inbound, approver=approver)
        except Exception:  # one chat's failure never stops the others
            log.exception("telegram: the turn for %s failed", inbound.scope)
            METRICS.count("lore_channel_errors", channel="telegram", what="turn")
            return
        if before is not None:
            await before
        if not inbound.respond and outcome.command is None:
            return  # kept in the conversation; a "yes" to a question of theirs is answered
        text = outcome.text
        if not text:
            failed = any(isinstance(e, ReplyFailed) for e in outcome.events)
            text = "Sorry, I could not answer that just now." if failed else ""
        if text:
            reply_to = message.message_id if message.chat.type != "private" else None
            await self._send(message.chat.id, text, reply_to=reply_to)

    # -- outbound -------------------------------------------------------------------------

    async def deliver(self, due: Delivery) -> None:
        """A reminder, back to the chat it was set in, mentioning who set it. Raises when
        Telegram refuses, so the scheduler retries it."""
        if due.scope == OWNER_SCOPE:  # the owner's conversation: their own 1:1 chat
            text = reminder_line(due, mention="")
            await self._send(int(self.settings.owner_ids[0]), text, strict=True)
            return
        chat_id = _chat_id(due.scope)
        mention = mention_for(due)
        text = reminder_line(due)
        user_id = self._author_id(due.scope, due.author)
        entities: list[dict[str, Any]] = []
        if mention and user_id:
            start = text.index(mention)
            entities.append(
                {
                    "type": "text_mention",
                    "offset": _units(text[:start]),
                    "length": _units(mention),
                    "user": {"id": int(user_id), "is_bot": False, "first_name": due.author},
                }
            )
        await self._send(chat_id, text, entities=entities, strict=True)

    def _author_id(self, scope: str, author: str) -> str:
        """The Telegram id of the person named `author` in this chat, from what they said."""
        for message in reversed(self.lore.session(scope).messages):
            if message.get("author") == author and message.get("author_id"):
                return str(message["author_id"])
        return ""

    async def _send(
        self,
        chat_id: int,
        text: str,
        *,
        reply_to: int | None = None,
        entities: list[dict[str, Any]] | None = None,
        strict: bool = False,
    ) -> None:
        from telegram import MessageEntity
        from telegram.error import RetryAfter, TelegramError

        pieces = split_message(text)
        for number, piece in enumerate(pieces):
            parsed = (
                [MessageEntity.de_json(e, self.bot) for e in entities]
                if entities and number == 0
                else None
            )
            for attempt in range(3):
                try:
                    await self.bot.send_message(
                        chat_id,
                        piece,
                        entities=parsed,
                        reply_to_message_id=reply_to if number == 0 else None,
                    )
                    break
                except RetryAfter as exc:
                    await asyncio.sleep(float(_seconds(exc.retry_after)))
                except TelegramError as exc:
                    if attempt == 2:
                        if strict:
                            raise
                        log.warning("telegram: sending to %s failed: %s", chat_id, exc)
                        METRICS.count("lore_channel_errors", channel="telegram", what="send")
                        return
                    await asyncio.sleep(0.5 * 2**attempt)


class _TelegramPlugin:
    """Telegram as `lore serve` finds it: on when the bot token is set."""

    name = "telegram"
    section = "telegram"

    def configured(self, config: Config) -> bool:
        return bool(config.telegram.token)

    def open(self, lore: Runtime) -> TelegramChannel:
        channel = TelegramChannel(lore, lore.config.telegram)
        channel.check_installed()
        return channel


PLUGIN = _TelegramPlugin()


def _chat_id(scope: str) -> int:
    """The chat a Telegram conversation key names; InvalidInputError for another key."""
    parts = Scope.parse(scope)
    digits = parts.id.removeprefix("-")
    if parts.channel != "telegram" or not (digits.isascii() and digits.isdigit()):
        raise InvalidInputError(f"{quoted(scope)} is not a Telegram chat's conversation key")
    return int(parts.id)


def _seconds(value: Any) -> float:
    """RetryAfter.retry_after: an int or a timedelta, depending on the version."""
    total = getattr(value, "total_seconds", None)
    return float(total()) if callable(total) else float(value)
