"""The LINE Messaging API as the LINE channel uses it: reply, push, profiles, the bot's own
name, through line-bot-sdk's async client.

Rate limits and LINE's own failures (429, 5xx, no answer) are retried with backoff; other
refusals are raised at once as `LineApiError(status)`. A push carries a retry key (a UUID
LINE remembers for a day): sent again with the same key, LINE answers 409 and does not
send it twice, which counts here as delivered. The client is made on first use, inside
the running event loop, and closed by `aclose()`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from lore.errors import LoreError

if TYPE_CHECKING:
    from lore.config import LineConfig

__all__ = ["MAX_BODY", "LineApi", "LineApiError", "mention_message", "text_message"]

log = logging.getLogger(__name__)

MAX_TEXT = 5000  # LINE's limit for one text message
MAX_MESSAGES = 5  # message objects in one reply or push
MAX_BODY = 1_000_000  # bytes of a webhook call; LINE's are a few KB, this big is not LINE
_TIMEOUT = 30  # seconds for one call
Sleep = Callable[[float], Awaitable[None]]


class LineApiError(LoreError):
    """LINE refused a call; `status` is its HTTP status (0: no answer at all)."""

    def __init__(self, message: str, status: int = 0) -> None:
        super().__init__(message)
        self.status = status


def text_message(text: str, *, quote_token: str | None = None) -> Any:
    from linebot.v3.messaging import TextMessage

    return TextMessage(text=text, quote_token=quote_token)


def mention_message(template: str, user_id: str) -> Any:
    """A textV2 message whose `{user}` is a real mention of `user_id`; any other brace in
    `template` must already be doubled."""
    from linebot.v3.messaging import (
        MentionSubstitutionObject,
        TextMessageV2,
        UserMentionTarget,
    )

    mention = MentionSubstitutionObject(mentionee=UserMentionTarget(user_id=user_id))
    return TextMessageV2(text=template, substitution={"user": mention})


class LineApi:
    def __init__(
        self, settings: LineConfig, *, sleep: Sleep = asyncio.sleep, attempts: int = 4
    ) -> None:
        self.settings = settings
        self._sleep = sleep
        self._attempts = attempts
        self._client: Any = None
        self._api: Any = None

    def _messaging(self) -> Any:
        if self._api is None:
            from linebot.v3.messaging import AsyncApiClient, AsyncMessagingApi, Configuration

            configuration = Configuration(
                host=self.settings.api_base_url.rstrip("/"),
                access_token=self.settings.access_token,
            )
            self._client = AsyncApiClient(configuration)
            self._api = AsyncMessagingApi(self._client)
        return self._api

    async def aclose(self) -> None:
        client, self._client, self._api = self._client, None, None
        if client is not None:
            await client.close()

    # -- calls ----------------------------------------------------------------------------

    async def bot_info(self) -> tuple[str, str]:
        """The bot's user id and display name."""
        # Asked while a webhook call waits for its answer: one try, no backoff.
        info = await self._call(
            "bot info", lambda api: api.get_bot_info(_request_timeout=_TIMEOUT), attempts=1
        )
        return str(info.user_id), str(info.display_name)

    async def display_name(self, kind: str, place: str, user_id: str) -> str:
        """What `user_id` is called in a group, a room or their 1:1 chat (`kind`)."""

        def ask(api: Any) -> Any:
            if kind == "group":
                return api.get_group_member_profile(place, user_id, _request_timeout=_TIMEOUT)
            if kind == "room":
                return api.get_room_member_profile(place, user_id, _request_timeout=_TIMEOUT)
            return api.get_profile(user_id, _request_timeout=_TIMEOUT)

        profile = await self._call("profile", ask)
        return str(profile.display_name)

    async def group_name(self, group_id: str) -> str:
        """The group's name, from its summary (a room has none)."""
        summary = await self._call(
            "group summary",
            lambda api: api.get_group_summary(group_id, _request_timeout=_TIMEOUT),
            attempts=1,
        )
        return str(summary.group_name or "")

    async def reply(self, reply_token: str, messages: list[Any]) -> list[str]:
        """Answer with a reply token (single use, valid about a minute); the sent ids."""
        from linebot.v3.messaging import ReplyMessageRequest

        request = ReplyMessageRequest(reply_token=reply_token, messages=messages)
        answer = await self._call(
            "reply",
            lambda api: api.reply_message(request, _request_timeout=_TIMEOUT),
        )
        return [str(sent.id) for sent in answer.sent_messages or []]

    async def push(self, to: str, messages: list[Any], *, retry_key: str) -> list[str]:
        """Send to a user, group or room; the same `retry_key` never sends twice."""
        from linebot.v3.messaging import PushMessageRequest

        request = PushMessageRequest(to=to, messages=messages)
        try:
            answer = await self._call(
                "push",
                lambda api: api.push_message(
                    request, x_line_retry_key=retry_key, _request_timeout=_TIMEOUT
                ),
            )
        except LineApiError as exc:
            if exc.status == 409:  # this retry key was accepted before: it is out
                return []
            raise
        return [str(sent.id) for sent in answer.sent_messages or []]

    async def _call(
        self, what: str, call: Callable[[Any], Awaitable[Any]], *, attempts: int = 0
    ) -> Any:
        from aiohttp import ClientError
        from linebot.v3.messaging import ApiException

        api = self._messaging()
        attempts = attempts or self._attempts
        delay = 1.0
        for attempt in range(attempts):
            last = attempt == attempts - 1
            try:
                return await call(api)
            except ApiException as exc:
                status = int(exc.status or 0)
                if not (status == 429 or status >= 500) or last:
                    raise LineApiError(f"LINE refused the {what} ({status})", status) from None
                wait = _retry_after(exc.headers) or delay
            except (ClientError, TimeoutError) as exc:
                if last:
                    raise LineApiError(f"LINE did not answer the {what}: {exc}") from None
                wait = delay
            log.warning("line: the %s failed; retrying in %.1f s", what, wait)
            await self._sleep(wait)
            delay = min(delay * 2, 30.0)
        raise AssertionError("unreachable")  # the loop returns or raises


def _retry_after(headers: Any) -> float:
    value = headers.get("Retry-After") if headers else None
    try:
        return min(float(value), 60.0) if value else 0.0
    except ValueError:
        return 0.0
