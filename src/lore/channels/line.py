"""The LINE channel: webhook events in (the gateway's `POST /line/webhook`), replies and
reminders out through the Messaging API. One conversation per chat.

A text message becomes an `Inbound` for `line:user:<id>`, `line:group:<id>` or
`line:room:<id>`, its author the speaker's LINE display name (asked once, then cached).
In a 1:1 chat Lore answers the owner (and anyone on the `allow` list, as a guest); a
stranger gets one polite line and nothing is stored. In a group or room Lore answers when
addressed (its name, a mention of the bot, a reply quoting one of its messages, or a
/command) and otherwise only keeps the message in the conversation, so the context is
there when someone asks. An answer goes out with the message's reply token while it is fresh (LINE
takes each once, for about a minute), else as a push; answers leave in the order the
messages came. Reminders are pushed to the chat they were set in, mentioning whoever set
them; a push LINE refuses is raised, so the scheduler retries it and, in the end, shows it
as failed.

With `channels.unified_owner_session` the owner's 1:1 chat is the owner's one conversation
(scope `owner`), shared with the terminal and Telegram; its reminders reach the owner's
own LINE chat by push when LINE is the channel they go to.

Every event is recorded in the chat ledger before the webhook call is answered
(`lore.channels.chat_inbox`): a redelivery is dropped, after a restart too, and an event
whose turn a crash cut short is handled by the next `lore serve`.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import re
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from lore.channels.chat_approval import ChatApprovals
from lore.channels.chat_inbox import ChatInbox, in_conversation
from lore.channels.line_api import (
    MAX_BODY,
    MAX_MESSAGES,
    MAX_TEXT,
    LineApi,
    LineApiError,
    mention_message,
    text_message,
)
from lore.channels.message_split import split_message
from lore.channels.names import ConversationNames
from lore.channels.scopes import LINE_KINDS, LineKind
from lore.config import OWNER_SCOPE
from lore.core.commands import is_command
from lore.errors import InvalidInputError, quoted
from lore.events import Inbound, ReplyFailed, Trust
from lore.health import HEALTH
from lore.metrics import METRICS
from lore.reminders.delivery import reminder_line
from lore.scope import Scope

if TYPE_CHECKING:
    from fastapi import APIRouter

    from lore.config import Config, LineConfig
    from lore.ports.chat_ledger import Received
    from lore.reminders.delivery import Delivery
    from lore.runtime import Runtime

__all__ = ["GREETING", "INTRO", "PLUGIN", "SORRY", "STRANGER", "Chat", "LineChannel"]

log = logging.getLogger(__name__)

STRANGER = "This assistant is private: it answers its owner only. Nothing you wrote was kept."
GREETING = "Hi {name}, I'm {bot}. Tell me what to remember or remind you of."
INTRO = (
    "Hi, I'm {bot}. I keep what is said here for this chat only and answer when you say "
    "my name, mention me or reply to me."
)
SORRY = "Sorry, I could not answer that just now."
_REPLY_WINDOW = 50.0  # seconds a reply token is trusted (LINE's limit is about a minute)
_NAME_TTL = 24 * 3600.0  # a display name is asked for again after a day

_MENTION = "\x00mention\x00"  # where LINE puts the mentioned person, in a reminder


@dataclass(frozen=True)
class Chat:
    """Where a message came from: `kind` user, group or room, and that chat's id; its
    `scope` the conversation key (InvalidInputError for an id that makes none)."""

    kind: LineKind
    id: str
    scope: str = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "scope", str(Scope("line", self.kind, self.id)))

    @classmethod
    def of_scope(cls, scope: str) -> Chat:
        """The chat a LINE conversation key names; InvalidInputError for another key."""
        parts = Scope.parse(scope)
        kind = next((k for k in LINE_KINDS if k == parts.kind), None)
        if parts.channel != "line" or kind is None:
            raise InvalidInputError(f"{quoted(scope)} is not a LINE chat's conversation key")
        return cls(kind, parts.id)

    @classmethod
    def of_source(cls, source: Any) -> Chat:
        """The chat an event came from; InvalidInputError if its id makes no conversation
        key (LINE's ids are plain letters and digits; anything else is not LINE)."""
        kind = str(source.type)
        if kind == "group":
            return cls("group", str(source.group_id))
        if kind == "room":
            return cls("room", str(source.room_id))
        return cls("user", str(source.user_id))


class LineChannel:
    name = "line"

    def __init__(
        self,
        lore: Runtime,
        settings: LineConfig,
        *,
        api: LineApi | None = None,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.lore = lore
        self.settings = settings
        self.api = api or LineApi(settings)
        self._monotonic = monotonic
        self._parser: Any = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._last: dict[str, asyncio.Future[None]] = {}
        self._names: dict[tuple[str, str], tuple[str, float]] = {}
        self._asking: dict[tuple[str, str], asyncio.Future[str]] = {}
        self.inbox = ChatInbox(lore.chat_ledger, "line", lore.clock, holder=lore.lease_holder)
        self.bot_id = ""
        self.bot_name = ""
        self.approvals: ChatApprovals[str] = ChatApprovals(self._push_text, "line")
        self.names = ConversationNames(lore, "line")
        self._group_asked: dict[str, float] = {}  # group id -> when its summary was asked

    def check_installed(self) -> None:
        """One clear line when the LINE client is missing, before anything starts."""
        try:
            import linebot.v3  # noqa: F401
        except ImportError:
            from lore.errors import ConfigError
            from lore.extras import install_hint

            raise ConfigError(f"LINE needs line-bot-sdk: {install_hint('line')}") from None

    async def aclose(self) -> None:
        await self.drain()
        await self.api.aclose()

    @property
    def reaches_owner(self) -> bool:
        return bool(self.settings.owner_ids)

    def describe(self) -> str:
        return "webhook at /line/webhook"

    def routes(self) -> APIRouter:
        from lore.channels.http.line_webhook import line_router

        return line_router(self)

    async def run_forever(self) -> None:
        """Until cancelled: keep the leases on events in hand, and handle the events a
        process that died (this one, before a restart) recorded but never handled."""
        HEALTH.channel("line", "webhook at /line/webhook")
        await self.inbox.keep(self.resume)

    async def resume(self, received: Received) -> None:
        """Handle an event left unhandled; its reply token is stale by now: pushed."""
        await self._know_myself()
        self._dispatch(received.key, received.payload, -math.inf, replayed=True)

    async def drain(self) -> None:
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    # -- the webhook ----------------------------------------------------------------------

    def parse(self, body: bytes, signature: str) -> list[dict[str, Any]]:
        """The events of one webhook call as LINE sent them, once its X-Line-Signature
        (HMAC-SHA256 of the raw body with the channel secret) checks out; refused
        otherwise."""
        from linebot.v3.exceptions import InvalidSignatureError
        from linebot.v3.webhook import WebhookParser

        if self._parser is None:
            self._parser = WebhookParser(self.settings.channel_secret)
        if not signature:
            raise InvalidInputError("the X-Line-Signature header is missing")
        if len(body) > MAX_BODY:
            raise InvalidInputError(f"the webhook body is over {MAX_BODY} bytes")
        try:
            text = body.decode("utf-8")
            self._parser.parse(text, signature)  # the signature, and events LINE would send
            raw = json.loads(text)["events"]
        except InvalidSignatureError:
            raise InvalidInputError("the X-Line-Signature does not match the body") from None
        except (UnicodeDecodeError, ValueError, KeyError, TypeError):
            raise InvalidInputError("the webhook body is not a LINE event list") from None
        if not isinstance(raw, list) or not all(isinstance(e, dict) for e in raw):
            raise InvalidInputError("the webhook body is not a LINE event list")
        return raw

    async def handle(self, events: list[dict[str, Any]]) -> None:
        """Take one webhook call's events, in order: each is recorded in the ledger (a
        redelivery is dropped), then queued behind the last one of its chat; the call
        returns once all are recorded, before any is answered."""
        await self._know_myself()
        received = self._monotonic()
        for raw in events:
            key = _event_key(raw)
            if not self.inbox.receive(key, raw):
                continue  # LINE redelivered what was already taken
            self._dispatch(key, raw, received)

    def _dispatch(
        self, key: str, raw: dict[str, Any], received: float, *, replayed: bool = False
    ) -> None:
        event = _event(raw)
        kind = str(getattr(event, "type", ""))
        source = getattr(event, "source", None)
        try:
            if source is not None:
                Chat.of_source(source)
        except InvalidInputError as exc:
            log.warning("line: event %s dropped: %s", key, exc)
            self.inbox.handled(key)
            return
        if kind == "message":
            self._on_message(event, key, received, replayed=replayed)
        elif kind == "follow":
            self._start(self._then_handled(key, self._on_follow(event, received)))
        elif kind == "join":
            self._start(self._then_handled(key, self._on_join(event, received)))
        else:
            self.inbox.handled(key)
            if kind == "leave":
                chat = Chat.of_source(event.source)
                log.info(
                    "line: Lore was removed from %s; its conversation, memories and reminders "
                    "are kept (`lore memory list --scope %s` shows them, "
                    "`lore memory forget --all --scope %s` erases its memories)",
                    chat.scope,
                    chat.scope,
                    chat.scope,
                )
            elif kind == "unfollow":
                log.info("line: %s blocked Lore; its conversation is kept", event.source.user_id)

    async def _then_handled(self, key: str, work: Awaitable[None]) -> None:
        try:
            await work
        except Exception:  # done as far as it goes; only a stop leaves it for later
            log.exception("line: handling event %s failed", key)
            METRICS.count("lore_channel_errors", channel="line", what="receive")
        self.inbox.handled(key)

    async def _know_myself(self) -> None:
        """The bot's own id and name, to see mentions of it and to introduce itself."""
        if self.bot_id:
            return
        try:
            self.bot_id, self.bot_name = await self.api.bot_info()
        except LineApiError as exc:
            log.warning("line: could not learn the bot's name (%s); will ask again", exc)

    def _start(self, work: Any) -> None:
        task = asyncio.create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # -- messages -------------------------------------------------------------------------

    def _on_message(self, event: Any, key: str, received: float, *, replayed: bool) -> None:
        message = event.message
        if str(getattr(message, "type", "")) != "text":
            self.inbox.handled(key)
            return
        chat = Chat.of_source(event.source)
        user_id = str(getattr(event.source, "user_id", "") or "")
        trust = self._trust(user_id, private=chat.kind == "user")
        if trust is None:
            reply = self._reply_or_push(chat, event.reply_token, received, STRANGER)
            self._start(self._then_handled(key, reply))
            return
        if trust == "owner" and self.approvals.answer(chat.scope, str(message.text)):
            self.inbox.handled(key)
            return  # the owner answered a tool's "may I?"; not a message for the chat
        # The owner's 1:1 chat may be part of the owner's one conversation across channels.
        scope = self.lore.config.conversation_scope(chat.scope)
        if replayed and in_conversation(self.lore, scope, "line", str(message.id)):
            self.inbox.handled(key)  # its turn ran before the process stopped
            return
        # Each message waits for the one before it in its chat: turns and answers keep
        # the order the messages came in.
        before = self._last.get(chat.scope)
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._last[chat.scope] = done
        turn = _Turn(event, chat, scope, user_id, trust, received, key)
        self._start(self._process(turn, before, done))

    def _trust(self, user_id: str, *, private: bool) -> Trust | None:
        if user_id and user_id in self.settings.owner_ids:
            return "owner"
        if not private:
            return "member"
        return "guest" if user_id in self.settings.allow else None

    async def _process(
        self, turn: _Turn, before: asyncio.Future[None] | None, done: asyncio.Future[None]
    ) -> None:
        chat = turn.chat
        try:
            author = await self._name_of(chat, turn.user_id)
            if chat.kind == "user":  # a 1:1 chat is called by the other person's name
                self.names.note(chat.scope, author)
            elif chat.kind == "group":
                await self._name_group(chat)
            if before is not None:
                await before
            await self._turn(turn, author)
        except Exception:  # one chat's failure never stops the others
            log.exception("line: the message for %s failed", chat.scope)
            METRICS.count("lore_channel_errors", channel="line", what="turn")
        finally:
            done.set_result(None)
            if self._last.get(chat.scope) is done:
                del self._last[chat.scope]
        # Not reached when cancelled (a stop, a crash): the event stays unhandled, and
        # the next process answers it.
        self.inbox.handled(turn.key)

    async def _turn(self, turn: _Turn, author: str) -> None:
        event, chat, trust = turn.event, turn.chat, turn.trust
        message = event.message
        respond = chat.kind == "user" or self._addressed(message)
        inbound = Inbound(
            scope=turn.scope,
            channel="line",
            author=author,
            text=self._text(message),
            trust=trust,
            message_id=str(message.id),
            author_id=turn.user_id,
            respond=respond,
        )
        approver = self.approvals.for_chat(chat.scope, author) if trust == "owner" else None
        outcome = await self.lore.bus.send(inbound, approver=approver)
        if not respond and outcome.command is None:
            return  # kept in the conversation; a "yes" to a question of theirs is answered
        text = outcome.text
        if not text and any(isinstance(e, ReplyFailed) for e in outcome.events):
            text = SORRY
        if text:
            quote = str(message.quote_token) if chat.kind != "user" else None
            await self._reply_or_push(chat, event.reply_token, turn.received, text, quote)

    def _addressed(self, message: Any) -> bool:
        """Said to Lore: a /command, a mention of the bot, a reply quoting Lore, or one of
        its names."""
        if is_command(str(message.text)):
            return True
        mention = getattr(message, "mention", None)
        for mentionee in getattr(mention, "mentionees", None) or []:
            if getattr(mentionee, "is_self", False):
                return True
        quoted = getattr(message, "quoted_message_id", None)
        if quoted and self.inbox.was_sent(str(quoted)):
            return True
        text = str(message.text).casefold()
        return any(_says(text, name.casefold()) for name in self._bot_names())

    def _bot_names(self) -> tuple[str, ...]:
        names = self.settings.names or ((self.bot_name,) if self.bot_name else ())
        return tuple(name for name in names if name.strip())

    def _text(self, message: Any) -> str:
        """The text, without the mention of the bot itself."""
        text = str(message.text)
        mention = getattr(message, "mention", None)
        spans = [
            (int(m.index), int(m.length))
            for m in getattr(mention, "mentionees", None) or []
            if getattr(m, "is_self", False)
        ]
        if not spans:
            return text.strip()
        units = text.encode("utf-16-le")  # LINE counts in UTF-16 units, as JavaScript does
        for index, length in sorted(spans, reverse=True):
            units = units[: 2 * index] + units[2 * (index + length) :]
        return " ".join(units.decode("utf-16-le", errors="replace").split())

    async def _name_of(self, chat: Chat, user_id: str) -> str:
        """The speaker's display name in this chat, asked once a day at most (messages
        that arrive together share one question)."""
        if not user_id:
            return "someone"
        key = (chat.scope, user_id)
        cached = self._names.get(key)
        if cached is not None and self._monotonic() - cached[1] < _NAME_TTL:
            return cached[0]
        asking = self._asking.get(key)
        if asking is None:
            asking = self._asking[key] = asyncio.ensure_future(self._ask_name(chat, user_id))
            asking.add_done_callback(lambda _: self._asking.pop(key, None))
        return await asyncio.shield(asking)

    async def _ask_name(self, chat: Chat, user_id: str) -> str:
        key = (chat.scope, user_id)
        cached = self._names.get(key)
        try:
            name = await self.api.display_name(chat.kind, chat.id, user_id)
        except LineApiError as exc:
            log.warning("line: no profile for a speaker in %s (%s)", chat.scope, exc)
            return cached[0] if cached is not None else f"LINE user …{user_id[-4:]}"
        name = " ".join(name.split()) or f"LINE user …{user_id[-4:]}"
        self._names[key] = (name, self._monotonic())
        return name

    async def _name_group(self, chat: Chat) -> str:
        """The group's name from its summary, asked once a day at most (LINE sends no
        rename event), and kept as the conversation's name."""
        asked = self._group_asked.get(chat.id)
        if asked is not None and self._monotonic() - asked < _NAME_TTL:
            return ""
        self._group_asked[chat.id] = self._monotonic()
        try:
            name = await self.api.group_name(chat.id)
        except LineApiError as exc:
            log.warning("line: no summary for %s (%s)", chat.scope, exc)
            return ""
        self.names.note(chat.scope, name)
        return name

    # -- follow and join ------------------------------------------------------------------

    async def _on_follow(self, event: Any, received: float) -> None:
        chat = Chat.of_source(event.source)
        if self._trust(chat.id, private=True) is None:
            await self._reply_or_push(chat, event.reply_token, received, STRANGER)
            return
        name = await self._name_of(chat, chat.id)
        self.names.note(chat.scope, name)
        text = GREETING.format(name=name, bot=self.bot_name or "Lore")
        await self._reply_or_push(chat, event.reply_token, received, text)

    async def _on_join(self, event: Any, received: float) -> None:
        chat = Chat.of_source(event.source)
        name = await self._name_group(chat) if chat.kind == "group" else ""
        self.names.joined(chat.scope, name)
        text = INTRO.format(bot=self.bot_name or "Lore")
        await self._reply_or_push(chat, event.reply_token, received, text)

    # -- outbound -------------------------------------------------------------------------

    async def _reply_or_push(
        self,
        chat: Chat,
        reply_token: str | None,
        received: float,
        text: str,
        quote: str | None = None,
    ) -> None:
        """Send `text` with the reply token while it is fresh (free of quota), the rest, or
        everything once it is stale or refused, by push."""
        pieces = split_message(text, MAX_TEXT)
        messages = [
            text_message(piece, quote_token=quote if number == 0 else None)
            for number, piece in enumerate(pieces)
        ]
        if reply_token and self._monotonic() - received < _REPLY_WINDOW:
            first, messages = messages[:MAX_MESSAGES], messages[MAX_MESSAGES:]
            try:
                self._note_sent(await self.api.reply(reply_token, first))
            except LineApiError as exc:
                log.warning("line: replying in %s failed (%s); pushing instead", chat.scope, exc)
                messages = first + messages
        for start in range(0, len(messages), MAX_MESSAGES):
            batch = messages[start : start + MAX_MESSAGES]
            try:
                sent = await self.api.push(chat.id, batch, retry_key=str(uuid.uuid4()))
            except LineApiError as exc:
                log.warning("line: sending to %s failed: %s", chat.scope, exc)
                METRICS.count("lore_channel_errors", channel="line", what="send")
                return
            self._note_sent(sent)

    async def _push_text(self, scope: str, text: str) -> None:
        await self._reply_or_push(Chat.of_scope(scope), None, 0.0, text)

    def _note_sent(self, ids: list[str]) -> None:
        try:
            self.inbox.sent(ids)
        except Exception:  # it was sent: only a later quote of it may go unrecognised
            log.exception("line: could not note the ids of messages sent")

    async def deliver(self, due: Delivery) -> None:
        """A reminder, pushed to the chat it was set in, mentioning who set it. Raises when
        LINE refuses, so the scheduler retries it; the occurrence's key is the push's
        retry key, so a retry after a lost answer never sends it twice."""
        if due.scope == OWNER_SCOPE:  # the owner's one conversation: their own 1:1 chat
            if not self.settings.owner_ids:
                raise LineApiError("LINE knows no owner to push to: set line.owner_ids")
            chat = Chat("user", self.settings.owner_ids[0])
            user_id = ""
        else:
            chat = Chat.of_scope(due.scope)
            user_id = self._author_id(due.scope, due.author)
        if chat.kind != "user" and user_id:
            line = reminder_line(due, _MENTION).replace("{", "{{").replace("}", "}}")
            message = mention_message(line.replace(_MENTION, "{user}"), user_id)
        elif chat.kind != "user":
            message = text_message(reminder_line(due))
        else:
            message = text_message(reminder_line(due, mention=""))  # their own chat
        retry_key = str(uuid.uuid5(uuid.NAMESPACE_URL, f"lore-reminder:{due.key}"))
        self._note_sent(await self.api.push(chat.id, [message], retry_key=retry_key))

    def _author_id(self, scope: str, author: str) -> str:
        """The LINE id of the person named `author` in this chat, from what they said."""
        for message in reversed(self.lore.session(scope).messages):
            if message.get("author") == author and message.get("author_id"):
                return str(message["author_id"])
        return ""


class _LinePlugin:
    """LINE as `lore serve` finds it: on when the channel secret and token are set."""

    name = "line"
    section = "line"

    def configured(self, config: Config) -> bool:
        return config.line.enabled

    def open(self, lore: Runtime) -> LineChannel:
        channel = LineChannel(lore, lore.config.line)
        channel.check_installed()
        return channel


PLUGIN = _LinePlugin()


def _says(text: str, name: str) -> bool:
    """Is `name` said in `text`? A Latin name as a word of its own ("lore," yes, "explore"
    no); a Chinese or Japanese one anywhere."""
    if not name:
        return False
    if name.isascii():
        return re.search(rf"(?<!\w){re.escape(name)}(?!\w)", text) is not None
    return name in text


@dataclass(frozen=True)
class _Turn:
    """One text message on its way to the bus."""

    event: Any
    chat: Chat  # where it was written (and the answer goes)
    scope: str  # the conversation it belongs to (`owner` for the owner's 1:1 chat, maybe)
    user_id: str
    trust: Trust
    received: float  # monotonic time it came; -inf when handled again after a restart
    key: str  # its event id in the ledger


def _event_key(raw: dict[str, Any]) -> str:
    """The ledger's key for an event: LINE's webhookEventId (the same when redelivered)."""
    key = raw.get("webhookEventId")
    if key:
        return str(key)
    message = raw.get("message")
    if isinstance(message, dict) and message.get("id"):
        return f"message:{message['id']}"
    return f"unkeyed:{uuid.uuid4().hex}"


def _event(raw: dict[str, Any]) -> Any:
    """A raw event as line-bot-sdk's model (as its WebhookParser builds it)."""
    from linebot.v3.models.events import UnknownEvent
    from linebot.v3.webhooks import Event

    try:
        return Event.from_dict(raw)
    except ValueError:
        return UnknownEvent.new_from_json_dict(raw)
