"""The WhatsApp channel (WhatsApp Cloud API): webhook calls in (the gateway's
`/whatsapp/webhook`), replies and reminders out through the Graph API. One conversation
per person: scope `whatsapp:<wa_id>`, the sender's profile name its author and name.

Meta signs every webhook call: `X-Hub-Signature-256` is the HMAC-SHA256 of the raw body
with the app secret; a call without a matching one is refused before anything is read
or stored. Each message is recorded in the chat ledger under its WhatsApp message id
before the call is answered: a redelivery is dropped, after a restart too, and one whose
turn a crash cut short is answered by the next `lore serve` (`lore.channels.chat_inbox`).
Answers leave in the order the messages came.

The owner (`whatsapp.owner_ids`) is answered as the owner, numbers on `allow` as guests;
anyone else gets one polite line and nothing is kept. WhatsApp lets a business message a
person only within 24 hours of their last message (outside it, only paid templates): a
reminder due outside the window, or one Graph refuses with code 131047, raises a clear
error, which the scheduler retries and `lore remind list` and the web page show. Status
callbacks (sent, delivered, read, failed) are recorded in the ledger and counted.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import logging
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from lore.channels.chat_approval import ChatApprovals
from lore.channels.chat_inbox import ChatInbox, in_conversation
from lore.channels.message_split import split_message
from lore.channels.names import ConversationNames
from lore.channels.whatsapp_api import (
    MAX_BODY,
    MAX_TEXT,
    WEBHOOK_PATH,
    WINDOW_CLOSED,
    WhatsAppApi,
    WhatsAppApiError,
)
from lore.config import OWNER_SCOPE
from lore.errors import InvalidInputError, quoted
from lore.events import Inbound, ReplyFailed, Trust
from lore.health import HEALTH
from lore.metrics import METRICS
from lore.reminders.delivery import reminder_line
from lore.scope import Scope

if TYPE_CHECKING:
    from fastapi import APIRouter

    from lore.config import Config, WhatsAppConfig
    from lore.ports.chat_ledger import Received
    from lore.reminders.delivery import Delivery
    from lore.runtime import Runtime

__all__ = ["MAX_BODY", "PLUGIN", "STRANGER", "WINDOW", "WhatsAppChannel", "WindowClosed"]

log = logging.getLogger(__name__)

STRANGER = "This assistant is private: it answers its owner only. Nothing you wrote was kept."
SORRY = "Sorry, I could not answer that just now."
WINDOW = timedelta(hours=24)  # how long after a person's message a business may write
_STATUSES = ("sent", "delivered", "read", "failed")


class WindowClosed(WhatsAppApiError):
    """The person's 24-hour window is closed: WhatsApp takes no free-form message now."""


@dataclass(frozen=True)
class _Message:
    """One text message on its way to the bus."""

    key: str  # its WhatsApp message id (wamid…), the ledger's key
    wa_id: str
    chat: str  # whatsapp:<wa_id>
    scope: str  # the conversation (`owner` for the owner's chat, maybe)
    author: str
    text: str
    trust: Trust


class WhatsAppChannel:
    name = "whatsapp"

    def __init__(
        self, lore: Runtime, settings: WhatsAppConfig, *, api: WhatsAppApi | None = None
    ) -> None:
        self.lore = lore
        self.settings = settings
        self.api = api or WhatsAppApi(settings)
        self.inbox = ChatInbox(lore.chat_ledger, "whatsapp", lore.clock, holder=lore.lease_holder)
        self.names = ConversationNames(lore, "whatsapp")
        self.approvals: ChatApprovals[str] = ChatApprovals(self._send_text, "whatsapp")
        self._owners = {_digits(number) for number in settings.owner_ids}
        self._allowed = {_digits(number) for number in settings.allow}
        self._tasks: set[asyncio.Task[None]] = set()
        self._last: dict[str, asyncio.Future[None]] = {}
        self._wrote: dict[str, datetime] = {}  # wa_id -> their last message, this process

    # -- as `lore serve` runs it ----------------------------------------------------------

    @property
    def reaches_owner(self) -> bool:
        return bool(self._owners)

    def describe(self) -> str:
        return f"webhook at {WEBHOOK_PATH}"

    def routes(self) -> APIRouter:
        from lore.channels.http.whatsapp_webhook import whatsapp_router

        return whatsapp_router(self)

    async def run_forever(self) -> None:
        """Until cancelled: keep the leases on messages in hand, and answer those a
        process that died (this one, before a restart) recorded but never answered."""
        HEALTH.channel("whatsapp", f"webhook at {WEBHOOK_PATH}")
        await self.inbox.keep(self.resume)

    async def resume(self, received: Received) -> None:
        self._dispatch(received.key, received.payload, replayed=True)

    async def drain(self) -> None:
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    async def aclose(self) -> None:
        await self.drain()
        await self.api.aclose()

    # -- the webhook ----------------------------------------------------------------------

    def verify(self, mode: str, token: str, challenge: str) -> str:
        """Meta's subscription check (`GET` with hub.mode, hub.verify_token,
        hub.challenge): the challenge back when the token is ours; InvalidInputError
        otherwise."""
        if mode != "subscribe" or not hmac.compare_digest(
            token.encode(), self.settings.verify_token.encode()
        ):
            raise InvalidInputError("the hub.verify_token does not match whatsapp.verify_token")
        return challenge

    def signed(self, body: bytes, signature: str) -> bool:
        """Is `signature` (X-Hub-Signature-256: "sha256=<hex>") the body's HMAC-SHA256
        with the app secret?"""
        digest = hmac.new(self.settings.app_secret.encode(), body, hashlib.sha256).hexdigest()
        return hmac.compare_digest(signature.encode(), f"sha256={digest}".encode())

    def handle(self, body: bytes) -> None:
        """Take one signed webhook call: each message and status is recorded in the
        ledger (a redelivery dropped), then messages are queued behind the last one of
        their chat. Returns once all are recorded, before any is answered."""
        try:
            payload = json.loads(body)
            changes = [
                change["value"]
                for entry in payload["entry"]
                for change in entry["changes"]
                if change.get("field") == "messages"
            ]
        except (UnicodeDecodeError, ValueError, KeyError, TypeError):
            raise InvalidInputError("the webhook body is not a WhatsApp notification") from None
        for value in changes:
            if not isinstance(value, dict):
                continue
            number = str((value.get("metadata") or {}).get("phone_number_id", ""))
            if number != self.settings.phone_number_id:
                log.warning("whatsapp: a call for phone number id %s ignored", quoted(number))
                continue
            names = {
                str(contact.get("wa_id", "")): str((contact.get("profile") or {}).get("name", ""))
                for contact in value.get("contacts") or []
            }
            for message in value.get("messages") or []:
                key = str(message.get("id", ""))
                record = {"message": message, "name": names.get(str(message.get("from")), "")}
                if key and self.inbox.receive(key, record):
                    self._dispatch(key, record)
            for status in value.get("statuses") or []:
                self._status(status)

    def _status(self, status: dict[str, Any]) -> None:
        """A delivery status for a message Lore sent: recorded once, counted, and a
        failure logged with WhatsApp's reason."""
        state = str(status.get("status", ""))
        key = f"status:{status.get('id', '')}:{state}"
        if state not in _STATUSES or not self.inbox.receive(key, status):
            return
        self.inbox.handled(key)
        METRICS.count("lore_channel_statuses", channel="whatsapp", status=state)
        if state == "failed":
            errors = status.get("errors") or [{}]
            reason = f"({errors[0].get('code', '?')}) {errors[0].get('title', 'no reason given')}"
            log.warning(
                "whatsapp: message %s to %s was not delivered: %s",
                status.get("id"),
                status.get("recipient_id"),
                reason,
            )

    def _dispatch(self, key: str, record: dict[str, Any], *, replayed: bool = False) -> None:
        message = record.get("message") or {}
        wa_id = _digits(str(message.get("from", "")))
        try:
            chat = str(Scope("whatsapp", "", wa_id))
        except InvalidInputError as exc:  # WhatsApp's ids are numbers; this is not WhatsApp
            log.warning("whatsapp: message %s dropped: %s", key, exc)
            self.inbox.handled(key)
            return
        self._note_wrote(wa_id, message.get("timestamp"))
        author = " ".join(str(record.get("name") or "").split()) or f"+{wa_id}"
        self.names.note(chat, author)
        text = str((message.get("text") or {}).get("body", "")).strip()
        if message.get("type") != "text" or not text:
            self.inbox.handled(key)  # a photo, a sticker, a reaction: nothing to say to
            return
        trust = self._trust(wa_id)
        if trust is None:
            self._start(self._then_handled(key, self._send_text(chat, STRANGER)))
            return
        if trust == "owner" and self.approvals.answer(chat, text):
            self.inbox.handled(key)
            return  # the owner answered a tool's "may I?"; not a message for the chat
        scope = self.lore.config.conversation_scope(chat)
        if replayed and in_conversation(self.lore, scope, "whatsapp", key):
            self.inbox.handled(key)  # its turn ran before the process stopped
            return
        before = self._last.get(chat)
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._last[chat] = done
        turn = _Message(key, wa_id, chat, scope, author, text, trust)
        self._start(self._process(turn, before, done))

    def _trust(self, wa_id: str) -> Trust | None:
        if wa_id in self._owners:
            return "owner"
        return "guest" if wa_id in self._allowed else None

    def _start(self, work: Any) -> None:
        task = asyncio.create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _then_handled(self, key: str, work: Any) -> None:
        try:
            await work
        except Exception:  # done as far as it goes; only a stop leaves it for later
            log.exception("whatsapp: handling message %s failed", key)
        self.inbox.handled(key)

    async def _process(
        self, turn: _Message, before: asyncio.Future[None] | None, done: asyncio.Future[None]
    ) -> None:
        try:
            if before is not None:
                await before
            await self._turn(turn)
        except Exception:  # one chat's failure never stops the others
            log.exception("whatsapp: the message for %s failed", turn.chat)
            METRICS.count("lore_channel_errors", channel="whatsapp", what="turn")
        finally:
            done.set_result(None)
            if self._last.get(turn.chat) is done:
                del self._last[turn.chat]
        # Not reached when cancelled (a stop, a crash): the next process answers it.
        self.inbox.handled(turn.key)

    async def _turn(self, turn: _Message) -> None:
        inbound = Inbound(
            scope=turn.scope,
            channel="whatsapp",
            author=turn.author,
            text=turn.text,
            trust=turn.trust,
            message_id=turn.key,
            author_id=turn.wa_id,
        )
        approver = (
            self.approvals.for_chat(turn.chat, turn.author) if turn.trust == "owner" else None
        )
        outcome = await self.lore.bus.send(inbound, approver=approver)
        text = outcome.text
        if not text and any(isinstance(e, ReplyFailed) for e in outcome.events):
            text = SORRY
        if text:
            await self._send_text(turn.chat, text)

    # -- outbound -------------------------------------------------------------------------

    async def _send_text(self, chat: str, text: str, *, strict: bool = False) -> None:
        """Send `text` in pieces WhatsApp takes; a refusal is logged (raised if `strict`)."""
        wa_id = Scope.parse(chat).id
        for piece in split_message(text, MAX_TEXT):
            try:
                sent = await self.api.send_text(wa_id, piece)
            except WhatsAppApiError as exc:
                if exc.code == WINDOW_CLOSED:
                    exc = WindowClosed(_closed(wa_id, self._last_wrote(chat, wa_id), exc), 400)
                if strict:
                    raise exc from None
                log.warning("whatsapp: sending to %s failed: %s", chat, exc)
                METRICS.count("lore_channel_errors", channel="whatsapp", what="send")
                return
            if sent:
                self.inbox.sent([sent])

    async def deliver(self, due: Delivery) -> None:
        """A reminder, to the person who set it, within their 24-hour window; outside it
        WindowClosed, which the scheduler retries and in the end shows as failed."""
        if due.scope == OWNER_SCOPE:  # the owner's one conversation: their own chat
            if not self.settings.owner_ids:
                raise WhatsAppApiError("WhatsApp knows no owner to write to: set owner_ids")
            chat = str(Scope("whatsapp", "", _digits(self.settings.owner_ids[0])))
        else:
            chat = due.scope
            if Scope.parse(chat).channel != "whatsapp":
                raise InvalidInputError(f"{quoted(chat)} is not a WhatsApp conversation key")
        wa_id = Scope.parse(chat).id
        wrote = self._last_wrote(due.scope, wa_id)
        if wrote is None or due.at - wrote > WINDOW:
            raise WindowClosed(_closed(wa_id, wrote))
        await self._send_text(chat, reminder_line(due, mention=""), strict=True)

    # -- the 24-hour window ---------------------------------------------------------------

    def _note_wrote(self, wa_id: str, timestamp: Any) -> None:
        try:
            moment = datetime.fromtimestamp(int(str(timestamp)), UTC)
        except (TypeError, ValueError, OverflowError, OSError):
            moment = self.lore.clock.now()
        if moment > self._wrote.get(wa_id, datetime.min.replace(tzinfo=UTC)):
            self._wrote[wa_id] = moment

    def _last_wrote(self, scope: str, wa_id: str) -> datetime | None:
        """When the person last wrote: seen by this process, else their last message in
        the conversation (after a restart)."""
        seen = self._wrote.get(wa_id)
        if seen is not None:
            return seen
        for message in reversed(self.lore.session(scope).messages):
            if (
                message.get("role") == "user"
                and message.get("channel") == "whatsapp"
                and message.get("author_id") == wa_id
            ):
                try:
                    return datetime.fromisoformat(str(message.get("timestamp")))
                except ValueError:
                    return None
        return None


def _closed(wa_id: str, wrote: datetime | None, exc: WhatsAppApiError | None = None) -> str:
    when = f"they last wrote {wrote.isoformat(timespec='minutes')}" if wrote else "no message"
    why = " (Graph error 131047)" if exc is not None else ""
    return (
        f"WhatsApp's 24-hour window with +{wa_id} is closed{why}: {when}; WhatsApp takes "
        "a message from Lore only within 24 hours of the person's last one, so this one "
        "goes out if they write again before the retries end"
    )


def _digits(number: str) -> str:
    """A WhatsApp id as Graph writes it: the number's digits ("+1 555-0100" -> "15550100")."""
    return "".join(c for c in number if c.isdigit())


class _WhatsAppPlugin:
    """WhatsApp as `lore serve` finds it: on when the access token and phone number id
    are set."""

    name = "whatsapp"
    section = "whatsapp"

    def configured(self, config: Config) -> bool:
        return config.whatsapp.enabled

    def open(self, lore: Runtime) -> WhatsAppChannel:
        return WhatsAppChannel(lore, lore.config.whatsapp)


PLUGIN = _WhatsAppPlugin()
