"""The Slack channel: events in over Socket Mode (no public address) or the Events API
(the gateway's `POST /slack/events`), answers and reminders out through the Web API.

A person's message becomes an `Inbound` for `slack:<channel>`, `slack:<channel>:<thread
ts>` for a thread (its own conversation), or `slack:<member>` for a DM (keyed by the
person, as LINE's and Telegram's 1:1 chats are); its author is the sender's display name
(users.info, asked once a day). In a DM Lore answers the owner and the `allow` list (as
a guest); anyone else gets one line and nothing is kept. In a channel or a thread Lore
answers when mentioned (`<@bot>`, an app_mention) or in a thread it started, and
otherwise keeps the message in the conversation, so the context is there when someone
asks. Replies are mrkdwn with `&`, `<` and `>` escaped, in the same thread, in the
order the messages came; reminders mention whoever set them with a real `<@U…>`; the
owner approves a tool with Block Kit buttons (or by answering y).

Every event is recorded in the chat ledger before it is acknowledged (Socket Mode's
envelope ack, the Events API's 200): a redelivery (Slack's retries, the `message` and
`app_mention` events of one message) is dropped, after a restart too, and one whose turn
a crash cut short is answered by the next `lore serve`.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lore.channels.chat_approval import ChatApprovals
from lore.channels.chat_inbox import ChatInbox, in_conversation
from lore.channels.message_split import split_message
from lore.channels.names import ConversationNames
from lore.channels.slack_api import BotIdentity, SlackApi, SlackApiError
from lore.channels.slack_events import (
    Place,
    SlackMessage,
    approval_blocks,
    button_press,
    escape,
    mentions,
    message_of,
    place_of_scope,
    plain_text,
)
from lore.config import OWNER_SCOPE
from lore.errors import InvalidInputError, LoreError
from lore.events import Inbound, ReplyFailed, Trust
from lore.health import HEALTH
from lore.metrics import METRICS
from lore.reminders.delivery import reminder_line
from lore.scope import Scope
from lore.text import one_line

if TYPE_CHECKING:
    from fastapi import APIRouter

    from lore.config import Config, SlackConfig
    from lore.ports.chat_ledger import Received
    from lore.reminders.delivery import Delivery
    from lore.runtime import Runtime

__all__ = ["MAX_TEXT", "PLUGIN", "SORRY", "STRANGER", "SlackChannel"]

log = logging.getLogger(__name__)

STRANGER = "This assistant is private: it answers its owner only. Nothing you wrote was kept."
SORRY = "Sorry, I could not answer that just now."
MAX_TEXT = 3500  # characters of one message; Slack advises 4,000 and escaping adds some
_NAME_TTL = 24 * 3600.0  # a display name is asked for again after a day
_MENTION = "\x00mention\x00"  # where the reminder's <@U…> goes


class SlackChannel:
    name = "slack"

    def __init__(
        self,
        lore: Runtime,
        settings: SlackConfig,
        *,
        api: SlackApi | None = None,
        monotonic: Callable[[], float] = time.monotonic,
        ping_interval: float = 5.0,
    ) -> None:
        self.lore = lore
        self.settings = settings
        self.api = api or SlackApi(settings)
        self._monotonic = monotonic
        self._ping_interval = ping_interval
        self._tasks: set[asyncio.Task[None]] = set()
        self._last: dict[str, asyncio.Future[None]] = {}
        self._names: dict[str, tuple[str, float]] = {}
        self._asking: dict[str, asyncio.Future[str]] = {}
        self._socket: Any = None
        self.inbox = ChatInbox(lore.chat_ledger, "slack", lore.clock, holder=lore.lease_holder)
        self.me = BotIdentity("", "", "", "")
        self.approvals: ChatApprovals[str] = ChatApprovals(self._ask, "slack")
        self.ready = asyncio.Event()  # set once the bot knows who it is
        self.names = ConversationNames(lore, "slack")
        self._named: set[str] = set()  # conversations whose name this process looked up

    def check_installed(self) -> None:
        """One clear line when the Slack client is missing, before anything starts."""
        try:
            import aiohttp  # noqa: F401
            import slack_sdk  # noqa: F401
        except ImportError:
            from lore.errors import ConfigError
            from lore.extras import install_hint

            raise ConfigError(f"Slack needs slack_sdk: {install_hint('slack')}") from None

    @property
    def how(self) -> str:
        ways = []
        if self.settings.app_token:
            ways.append("Socket Mode")
        if self.settings.signing_secret:
            ways.append("Events API at /slack/events")
        return " and ".join(ways)

    # -- running --------------------------------------------------------------------------

    async def run_forever(self) -> None:
        """Until cancelled: learn who the bot is, hold the Socket Mode connection (when an
        app token is set), and handle what a process that stopped left unhandled."""
        await self._know_myself()
        keeper = asyncio.create_task(self.inbox.keep(self.resume), name="slack-inbox")
        try:
            if not self.settings.app_token:
                HEALTH.channel("slack", f"connected ({self.how})")
            elif await self._app_token_taken():
                await self._connect()
                HEALTH.channel("slack", f"connected ({self.how})")
            await keeper
        finally:
            keeper.cancel()
            await asyncio.gather(keeper, return_exceptions=True)
            await self._disconnect()

    async def _app_token_taken(self) -> bool:
        """Will Slack open a socket for the app token? Refused, it says so once, in one
        line, instead of the socket client retrying it for ever."""
        try:
            await self.api.check_app_token(self.settings.app_token)
        except SlackApiError as exc:
            if exc.status == 429 or exc.status >= 500 or not exc.error:
                return True  # passing: the socket client retries
            log.warning("slack: no Socket Mode: %s; check slack.app_token (xapp-…)", exc)
            HEALTH.channel("slack", f"Socket Mode refused: {one_line(str(exc), 120)}")
            return False
        return True

    async def _know_myself(self) -> None:
        delay = 1.0
        while not self.ready.is_set():
            try:
                self.me = await self.api.identity()
            except SlackApiError as exc:
                log.warning("slack: auth.test failed (%s); retrying in %.0f s", exc, delay)
                HEALTH.channel("slack", f"retrying: {one_line(str(exc), 120)}")
                await asyncio.sleep(delay)
                delay = min(delay * 2, 60.0)
                continue
            self.ready.set()

    async def _connect(self) -> None:
        from slack_sdk.socket_mode.aiohttp import SocketModeClient

        self._socket = SocketModeClient(
            app_token=self.settings.app_token,
            web_client=self.api.client,
            ping_interval=self._ping_interval,
            logger=logging.getLogger("lore.channels.slack.socket"),
        )
        self._socket.socket_mode_request_listeners.append(self._on_envelope)
        await self._socket.connect()

    async def _disconnect(self) -> None:
        socket, self._socket = self._socket, None
        if socket is not None:
            await socket.close()

    async def aclose(self) -> None:
        await self._disconnect()
        await self.drain()
        await self.api.aclose()

    async def drain(self) -> None:
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    # -- as `lore serve` runs it (`lore.channels.plugin.Channel`) -------------------------

    @property
    def reaches_owner(self) -> bool:
        return bool(self.settings.owner_ids)

    def describe(self) -> str:
        return self.how

    def routes(self) -> APIRouter | None:
        """The Events API at /slack/events, when a signing secret is set."""
        if not self.settings.signing_secret:
            return None
        from lore.channels.http.slack_webhook import slack_router

        return slack_router(self)

    async def _on_envelope(self, client: Any, request: Any) -> None:
        """A Socket Mode envelope: recorded, then acknowledged by its envelope_id; one
        that cannot be recorded is not acknowledged, so Slack sends it again."""
        from slack_sdk.socket_mode.response import SocketModeResponse

        payload = request.payload if isinstance(request.payload, dict) else {}
        try:
            if request.type == "events_api":
                self.accept(payload)
            elif request.type == "interactive":
                self.press(payload)
        except LoreError as exc:
            log.warning("slack: envelope %s not taken (%s)", request.envelope_id, exc)
            return
        await client.send_socket_mode_response(SocketModeResponse(request.envelope_id))

    async def resume(self, received: Received) -> None:
        """Handle an event left unhandled by a process that stopped."""
        await self._know_myself()
        message = message_of(received.payload)
        if message is None:
            self.inbox.handled(received.key)
            return
        self._dispatch(message, received.key, replayed=True)

    # -- inbound --------------------------------------------------------------------------

    def accept(self, envelope: dict[str, Any]) -> bool:
        """Record an `event_callback` (posted or over the socket) and queue its message;
        False for one taken before, or for an event that carries no one's message.
        Nothing here awaits: messages queue in the order they came."""
        try:
            message = message_of(envelope)
        except InvalidInputError as exc:
            log.warning("slack: event %s dropped: %s", envelope.get("event_id"), exc)
            return False
        if message is None:
            self._noticed(envelope)
            return False
        if not self.inbox.receive(message.key, envelope):
            return False  # Slack sent it again, or it is the other event of one message
        self._dispatch(message, message.key)
        return True

    def _noticed(self, envelope: dict[str, Any]) -> None:
        """Events that need no turn: the bot joining a channel is logged with its name and
        key, and a channel renamed keeps its new name."""
        event = envelope.get("event") or {}
        if event.get("type") == "member_joined_channel" and event.get("user") == self.me.user_id:
            self._start(self._log_join(str(event.get("channel") or "")))
        elif event.get("type") == "channel_rename" and isinstance(event.get("channel"), dict):
            renamed = event["channel"]
            scope = str(Scope("slack", "", str(renamed.get("id") or "")))
            if renamed.get("id") and renamed.get("name"):
                self.names.note(scope, f"#{renamed['name']}")
                self._named.add(scope)

    async def _log_join(self, channel: str) -> None:
        try:
            name = await self.api.channel_name(channel)
        except SlackApiError:
            name = ""
        scope = str(Scope("slack", "", channel))
        self._named.add(scope)
        self.names.joined(scope, f"#{name}" if name else "")
        log.info("slack: Lore joined #%s; its conversation is %s", name or channel, scope)

    async def _keep_name(self, message: SlackMessage, author: str) -> None:
        """The conversation's name, looked up once a process: the person of a DM, the
        channel's #name, a thread as the channel's (the names page and lists show it)."""
        scope = message.scope
        if scope in self._named:
            return
        self._named.add(scope)
        if message.direct:
            self.names.note(scope, author)
            return
        try:
            name = await self.api.channel_name(message.channel)
        except SlackApiError:
            self._named.discard(scope)  # asked again with the next message
            return
        if name:
            self.names.note(scope, f"#{name} (thread)" if message.thread_ts else f"#{name}")

    def _dispatch(self, message: SlackMessage, key: str, *, replayed: bool = False) -> None:
        trust = self._trust(message.user, direct=message.direct)
        if trust is None:
            self._start(self._then_handled(key, self._post(message.place, STRANGER)))
            return
        if trust == "owner" and self.approvals.answer(message.scope, plain_text(message.text, "")):
            self.inbox.handled(key)
            return  # the owner answered a tool's "may I?"; not a message for the chat
        scope = self.lore.config.conversation_scope(message.scope)
        if replayed and in_conversation(self.lore, scope, "slack", message.ts):
            self.inbox.handled(key)  # its turn ran before the process stopped
            return
        # Each message waits for the one before it in its chat: turns and answers keep
        # the order the messages came in.
        before = self._last.get(message.scope)
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._last[message.scope] = done
        self._start(self._process(_Turn(message, scope, trust, key), before, done))

    def _trust(self, user: str, *, direct: bool) -> Trust | None:
        if user in self.settings.owner_ids:
            return "owner"
        if not direct:
            return "member"
        return "guest" if user in self.settings.allow else None

    async def _then_handled(self, key: str, work: Awaitable[None]) -> None:
        try:
            await work
        except Exception:  # done as far as it goes; only a stop leaves it for later
            log.exception("slack: handling event %s failed", key)
        self.inbox.handled(key)

    def _start(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _process(
        self, turn: _Turn, before: asyncio.Future[None] | None, done: asyncio.Future[None]
    ) -> None:
        chat = turn.message.scope
        try:
            author = await self._name_of(turn.message.user)
            await self._keep_name(turn.message, author)
            if before is not None:
                await before
            await self._turn(turn, author)
        except Exception:  # one chat's failure never stops the others
            log.exception("slack: the message for %s failed", chat)
            METRICS.count("lore_channel_errors", channel="slack", what="turn")
        finally:
            done.set_result(None)
            if self._last.get(chat) is done:
                del self._last[chat]
        # Not reached when cancelled (a stop, a crash): the next process answers it.
        self.inbox.handled(turn.key)

    async def _turn(self, turn: _Turn, author: str) -> None:
        message = turn.message
        respond = message.direct or self._addressed(message)
        inbound = Inbound(
            scope=turn.scope,
            channel="slack",
            author=author,
            text=plain_text(message.text, self.me.user_id),
            trust=turn.trust,
            message_id=message.ts,
            author_id=message.user,
            respond=respond,
        )
        owner = turn.trust == "owner"
        approver = self.approvals.for_chat(message.scope, author) if owner else None
        outcome = await self.lore.bus.send(inbound, approver=approver)
        if not respond and outcome.command is None:
            return  # kept in the conversation; a "yes" to a question of theirs is answered
        text = outcome.text
        failed = [e for e in outcome.events if isinstance(e, ReplyFailed)]
        if not text and failed:
            log.warning("slack: the turn in %s failed: %s", turn.scope, failed[0].message)
            text = SORRY
        if text:
            await self._post(message.place, escape(text))

    def _addressed(self, message: SlackMessage) -> bool:
        """Said to Lore: an app_mention, `<@bot>` in the text, or a message in a thread
        that Lore started."""
        me = self.me.user_id
        if message.mentioned or (me and mentions(message.text, me)):
            return True
        return bool(me) and message.thread_ts is not None and message.parent_user_id == me

    async def _name_of(self, user: str) -> str:
        """The sender's display name, asked once a day at most (messages that arrive
        together share one question)."""
        cached = self._names.get(user)
        if cached is not None and self._monotonic() - cached[1] < _NAME_TTL:
            return cached[0]
        asking = self._asking.get(user)
        if asking is None:
            asking = self._asking[user] = asyncio.ensure_future(self._ask_name(user))
            asking.add_done_callback(lambda _: self._asking.pop(user, None))
        return await asyncio.shield(asking)

    async def _ask_name(self, user: str) -> str:
        cached = self._names.get(user)
        fallback = cached[0] if cached is not None else f"Slack user {user}"
        try:
            name = await self.api.display_name(user)
        except SlackApiError as exc:
            log.warning("slack: no profile for %s (%s)", user, exc)
            return fallback
        name = name or fallback
        self._names[user] = (name, self._monotonic())
        return name

    # -- buttons --------------------------------------------------------------------------

    def press(self, payload: dict[str, Any]) -> None:
        """An interactive payload: the owner pressing Allow or Deny answers the question
        in that chat, and the question shows who answered; anyone else's press is not an
        answer."""
        press = button_press(payload)
        if press is None:
            return
        if press.user not in self.settings.owner_ids:
            log.info("slack: %s pressed an approval button; only the owner answers", press.user)
            return
        if self.approvals.answer(press.chat, press.answer) and press.message_ts:
            word = "Allowed" if press.answer == "y" else "Denied"
            shown = f"{word} by <@{press.user}>."
            self._start(self._quietly(self.api.update(press.channel, press.message_ts, shown)))

    async def _quietly(self, work: Awaitable[None]) -> None:
        try:
            await work
        except SlackApiError as exc:
            log.warning("slack: could not update the question: %s", exc)

    async def _ask(self, chat: str, question: str) -> None:
        """A tool's "may I?" to the owner: the question with Allow and Deny buttons."""
        place = place_of_scope(chat)
        await self.api.post(
            place.channel,
            escape(question),
            thread_ts=place.thread_ts,
            blocks=approval_blocks(question, chat),
        )

    # -- outbound -------------------------------------------------------------------------

    async def _post(self, place: Place, text: str, *, strict: bool = False) -> None:
        """Post already-escaped mrkdwn in pieces Slack takes; a refusal is logged (raised
        when `strict`, for the scheduler to retry)."""
        for piece in split_message(text, MAX_TEXT):
            try:
                await self.api.post(place.channel, piece, thread_ts=place.thread_ts)
            except SlackApiError as exc:
                if strict:
                    raise
                log.warning("slack: posting to %s failed: %s", place.channel, exc)
                METRICS.count("lore_channel_errors", channel="slack", what="send")
                return

    async def deliver(self, due: Delivery) -> None:
        """A reminder, posted where it was set, mentioning who set it (`<@U…>`). Raises
        when Slack refuses, so the scheduler retries it."""
        if due.scope == OWNER_SCOPE:  # the owner's one conversation: their own DM
            if not self.settings.owner_ids:
                raise SlackApiError("Slack knows no owner to post to: set slack.owner_ids")
            place, direct = Place(self.settings.owner_ids[0]), True
        else:
            place, direct = place_of_scope(due.scope), Scope.parse(due.scope).is_direct
        user = "" if direct else self._author_id(due.scope, due.author)
        if direct:
            text = escape(reminder_line(due, mention=""))
        elif user:
            text = escape(reminder_line(due, _MENTION)).replace(_MENTION, f"<@{user}>")
        else:
            text = escape(reminder_line(due))
        await self._post(place, text, strict=True)

    def _author_id(self, scope: str, author: str) -> str:
        """The member id of the person named `author` in this chat, from what they said."""
        for message in reversed(self.lore.session(scope).messages):
            if message.get("author") == author and message.get("author_id"):
                return str(message["author_id"])
        return ""


@dataclass(frozen=True)
class _Turn:
    """One message on its way to the bus."""

    message: SlackMessage
    scope: str  # the conversation it belongs to (`owner` for the owner's DM, maybe)
    trust: Trust
    key: str  # its key in the ledger


class _SlackPlugin:
    """Slack as `lore serve` finds it: on when the bot token and an app token (Socket
    Mode) or a signing secret (the Events API) are set."""

    name = "slack"
    section = "slack"

    def configured(self, config: Config) -> bool:
        return config.slack.enabled

    def open(self, lore: Runtime) -> SlackChannel:
        channel = SlackChannel(lore, lore.config.slack)
        channel.check_installed()
        return channel


PLUGIN = _SlackPlugin()
