"""What Slack sends and what Lore sends back, as values: a message event read into a
`SlackMessage` (who, where, which conversation), a button press into a `ButtonPress`,
the signing-secret check of an Events API call, and the mrkdwn and Block Kit Lore writes.

The same envelopes come over both ways in: the Events API posts an `event_callback` to
the gateway, and Socket Mode wraps the same body in an `events_api` envelope. A message
is keyed in the ledger by where it was written and its `ts` (`msg:C…:1700000000.000100`),
which is what the `message` and the `app_mention` event of one message share: the
second is dropped as a redelivery, as a retried call (`X-Slack-Retry-Num`) is.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from dataclasses import dataclass
from typing import Any, Literal

from lore.errors import InvalidInputError
from lore.scope import Scope

__all__ = [
    "APPROVE",
    "DENY",
    "MAX_BODY",
    "ButtonPress",
    "Place",
    "SlackMessage",
    "approval_blocks",
    "button_press",
    "check_signature",
    "escape",
    "message_of",
    "place_of_scope",
    "unescape",
]

MAX_BODY = 1_000_000  # bytes; Slack's events are a few KB, anything this big is not Slack
SIGNATURE_WINDOW = 5 * 60  # seconds a signed request's timestamp may be off
APPROVE = "lore_approve"
DENY = "lore_deny"

# Messages people write; edits, deletions, joins and bots' posts are not.
_KEPT_SUBTYPES = frozenset({"", "thread_broadcast", "file_share"})
_USER_MENTION = re.compile(r"<@([UW][A-Z0-9]+)(?:\|[^>]*)?>")
_ID = re.compile(r"[A-Z0-9]{2,40}")  # Slack's channel and member ids: C0…, D0…, U0…
_TS = re.compile(r"\d{1,12}\.\d{1,9}")  # a message's ts: seconds and a sequence


@dataclass(frozen=True)
class Place:
    """Where a message is posted: a channel (or DM, or a member's id for their DM), and
    the thread in it, if any."""

    channel: str
    thread_ts: str | None = None


@dataclass(frozen=True)
class SlackMessage:
    key: str  # the ledger's key for it
    event_id: str
    channel: str  # C…, G…, D…
    direct: bool  # a DM with the app
    user: str  # the sender's member id
    text: str  # as Slack sent it: escaped, mentions as <@U…>
    ts: str
    thread_ts: str | None  # the thread it is in (not for a thread's first message)
    parent_user_id: str  # who started that thread
    mentioned: bool  # an app_mention event: the bot was mentioned

    @property
    def scope(self) -> str:
        """Its conversation: the person for a DM, else the channel, or the thread in it."""
        if self.direct:
            return str(Scope("slack", "", self.user))
        if self.thread_ts:
            return str(Scope("slack", "", f"{self.channel}:{self.thread_ts}"))
        return str(Scope("slack", "", self.channel))

    @property
    def place(self) -> Place:
        """Where its answer goes: the same DM or channel, and the same thread."""
        return Place(self.channel, self.thread_ts)


@dataclass(frozen=True)
class ButtonPress:
    """One of Lore's approval buttons, pressed."""

    user: str
    chat: str  # the chat scope the question was asked in
    answer: Literal["y", "n"]
    channel: str
    message_ts: str


def message_of(envelope: dict[str, Any]) -> SlackMessage | None:
    """The person's message an `event_callback` carries; None for any other event (a bot's
    post, an edit, a join, a reaction). InvalidInputError for a message no Slack sends."""
    event = envelope.get("event")
    if envelope.get("type") != "event_callback" or not isinstance(event, dict):
        return None
    kind = event.get("type")
    if kind not in ("message", "app_mention"):
        return None
    if str(event.get("subtype") or "") not in _KEPT_SUBTYPES or event.get("bot_id"):
        return None
    channel, user, ts = event.get("channel"), event.get("user"), event.get("ts")
    thread, text = event.get("thread_ts") or ts, event.get("text")
    if not (
        isinstance(channel, str)
        and _ID.fullmatch(channel)
        and isinstance(user, str)
        and _ID.fullmatch(user)
        and isinstance(ts, str)
        and _TS.fullmatch(ts)
        and isinstance(thread, str)
        and _TS.fullmatch(thread)
        and isinstance(text, str)
    ):
        raise InvalidInputError("a Slack message event needs a channel, user, ts and text")
    thread_ts = thread if thread != ts else None
    direct = event.get("channel_type") == "im" or channel.startswith("D")
    return SlackMessage(
        key=f"msg:{channel}:{ts}",
        event_id=str(envelope.get("event_id") or ""),
        channel=channel,
        direct=direct,
        user=user,
        text=text,
        ts=ts,
        thread_ts=thread_ts,
        parent_user_id=str(event.get("parent_user_id") or ""),
        mentioned=kind == "app_mention",
    )


def place_of_scope(scope: str) -> Place:
    """Where a Slack conversation's messages go; InvalidInputError for another key."""
    parts = Scope.parse(scope)
    if parts.channel != "slack" or parts.kind:
        raise InvalidInputError(f"{scope!r} is not a Slack conversation's key")
    channel, _, thread = parts.id.partition(":")
    return Place(channel, thread or None)


def button_press(payload: dict[str, Any]) -> ButtonPress | None:
    """A `block_actions` payload pressing one of Lore's approval buttons; None otherwise."""
    if payload.get("type") != "block_actions":
        return None
    actions = payload.get("actions")
    if not isinstance(actions, list) or not actions or not isinstance(actions[0], dict):
        return None
    action = actions[0]
    if action.get("action_id") not in (APPROVE, DENY):
        return None
    user = (payload.get("user") or {}).get("id")
    container = payload.get("container") or {}
    channel = container.get("channel_id") or (payload.get("channel") or {}).get("id")
    if not all(isinstance(v, str) and v for v in (user, channel, action.get("value"))):
        return None
    return ButtonPress(
        user=str(user),
        chat=str(action["value"]),
        answer="y" if action["action_id"] == APPROVE else "n",
        channel=str(channel),
        message_ts=str(container.get("message_ts") or ""),
    )


def check_signature(secret: str, body: bytes, timestamp: str, signature: str, now: float) -> None:
    """Slack's v0 signature: `v0=` and the hex HMAC-SHA256 of `v0:<timestamp>:<body>` with
    the signing secret, the timestamp within five minutes of `now`. InvalidInputError
    saying what is wrong otherwise."""
    from slack_sdk.signature import SignatureVerifier

    if not timestamp or not signature:
        raise InvalidInputError("the X-Slack-Signature or X-Slack-Request-Timestamp is missing")
    if not timestamp.isascii() or not timestamp.isdigit():
        raise InvalidInputError("the X-Slack-Request-Timestamp is not a number of seconds")
    if abs(now - int(timestamp)) > SIGNATURE_WINDOW:
        raise InvalidInputError("the X-Slack-Request-Timestamp is over five minutes off")
    expected = SignatureVerifier(secret).generate_signature(timestamp=timestamp, body=body)
    if expected is None or not hmac.compare_digest(expected, signature):
        raise InvalidInputError("the X-Slack-Signature does not match the body")


def sign(secret: str, body: bytes, timestamp: str) -> str:
    """The X-Slack-Signature Slack would send (for the benchmark and the tests)."""
    base = b"v0:" + timestamp.encode() + b":" + body
    return "v0=" + hmac.new(secret.encode(), base, hashlib.sha256).hexdigest()


def escape(text: str) -> str:
    """Text for mrkdwn: `&`, `<` and `>` as Slack wants them, so `<@U…>`, `<!channel>`
    and links in a reply are shown as written, never acted on."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def unescape(text: str) -> str:
    return text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


def plain_text(text: str, bot_user_id: str) -> str:
    """What a person wrote, as they wrote it: the mention of the bot taken out, Slack's
    escaping undone."""
    if bot_user_id:
        text = re.sub(rf"<@{re.escape(bot_user_id)}(?:\|[^>]*)?>", " ", text)
    return " ".join(unescape(text).split())


def mentions(text: str, user_id: str) -> bool:
    return any(found == user_id for found in _USER_MENTION.findall(text))


def approval_blocks(question: str, chat: str) -> list[dict[str, Any]]:
    """The question (escaped) with Allow and Deny buttons; the buttons carry the chat."""
    return [
        {"type": "section", "text": {"type": "mrkdwn", "text": escape(question)[:3000]}},
        {
            "type": "actions",
            "block_id": "lore_approval",
            "elements": [
                {
                    "type": "button",
                    "action_id": APPROVE,
                    "text": {"type": "plain_text", "text": "Allow"},
                    "style": "primary",
                    "value": chat,
                },
                {
                    "type": "button",
                    "action_id": DENY,
                    "text": {"type": "plain_text", "text": "Deny"},
                    "style": "danger",
                    "value": chat,
                },
            ],
        },
    ]
