"""The Slack Web API as the Slack channel uses it: who the bot is, a member's display name,
a channel's name, posting and updating messages, through slack_sdk's async client.

A `ratelimited` answer (HTTP 429) is retried after the Retry-After Slack gives; Slack's
own failures (5xx) and no answer at all are retried with backoff; any other refusal is
raised at once as `SlackApiError(error, status)` with Slack's error code ("channel_not_found",
"not_in_channel"). Decisions are made on the status code, never on the message text.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lore.errors import LoreError

if TYPE_CHECKING:
    from lore.config import SlackConfig

__all__ = ["BotIdentity", "SlackApi", "SlackApiError"]

log = logging.getLogger(__name__)

_TIMEOUT = 30  # seconds for one call
Sleep = Callable[[float], Awaitable[None]]


class SlackApiError(LoreError):
    """Slack refused a call; `error` is its error code, `status` the HTTP status (0: no
    answer at all)."""

    def __init__(self, message: str, error: str = "", status: int = 0) -> None:
        super().__init__(message)
        self.error = error
        self.status = status


@dataclass(frozen=True)
class BotIdentity:
    user_id: str  # the bot user's member id (U…): how a mention of it is written
    bot_id: str  # the bot's id (B…): what its own messages carry
    name: str
    team: str


class SlackApi:
    def __init__(
        self, settings: SlackConfig, *, sleep: Sleep = asyncio.sleep, attempts: int = 4
    ) -> None:
        self.settings = settings
        self._sleep = sleep
        self._attempts = attempts
        self._client: Any = None
        self._session: Any = None

    @property
    def client(self) -> Any:
        """slack_sdk's AsyncWebClient with the bot token (Socket Mode shares it), over one
        aiohttp session whose connections are kept open between calls; made on first
        use, inside the running event loop."""
        if self._client is None:
            import aiohttp
            from slack_sdk.web.async_client import AsyncWebClient

            self._session = aiohttp.ClientSession()
            self._client = AsyncWebClient(
                token=self.settings.bot_token,
                base_url=self.settings.api_base_url,
                timeout=_TIMEOUT,
                session=self._session,
                retry_handlers=[],  # retried here, by status
            )
        return self._client

    async def aclose(self) -> None:
        session, self._session, self._client = self._session, None, None
        if session is not None:
            await session.close()

    # -- calls ----------------------------------------------------------------------------

    async def identity(self) -> BotIdentity:
        answer = await self._call("auth.test", lambda c: c.auth_test())
        return BotIdentity(
            user_id=str(answer.get("user_id") or ""),
            bot_id=str(answer.get("bot_id") or ""),
            name=str(answer.get("user") or "Lore"),
            team=str(answer.get("team") or ""),
        )

    async def check_app_token(self, app_token: str) -> None:
        """SlackApiError when Slack will not open a Socket Mode connection for this token
        (a bot token given as the app token, a revoked one, no connections:write)."""
        await self._call(
            "apps.connections.open", lambda c: c.apps_connections_open(app_token=app_token)
        )

    async def display_name(self, user: str) -> str:
        """What the member is called: the display name they chose, else the real name."""
        answer = await self._call("users.info", lambda c: c.users_info(user=user))
        person = answer.get("user") or {}
        profile = person.get("profile") or {}
        for name in (
            profile.get("display_name"),
            profile.get("real_name"),
            person.get("real_name"),
            person.get("name"),
        ):
            if isinstance(name, str) and name.strip():
                return " ".join(name.split())
        return ""

    async def channel_name(self, channel: str) -> str:
        answer = await self._call(
            "conversations.info", lambda c: c.conversations_info(channel=channel)
        )
        return str((answer.get("channel") or {}).get("name") or "")

    async def post(
        self,
        channel: str,
        text: str,
        *,
        thread_ts: str | None = None,
        blocks: list[dict[str, Any]] | None = None,
    ) -> str:
        """Post `text` (mrkdwn, already escaped) to a channel, DM or thread; its ts."""

        def send(client: Any) -> Any:
            return client.chat_postMessage(
                channel=channel, text=text, thread_ts=thread_ts, blocks=blocks, unfurl_links=False
            )

        answer = await self._call("chat.postMessage", send)
        return str(answer.get("ts") or "")

    async def update(
        self, channel: str, ts: str, text: str, *, blocks: list[dict[str, Any]] | None = None
    ) -> None:
        await self._call(
            "chat.update",
            lambda c: c.chat_update(channel=channel, ts=ts, text=text, blocks=blocks or []),
        )

    async def _call(self, what: str, call: Callable[[Any], Awaitable[Any]]) -> dict[str, Any]:
        from aiohttp import ClientError
        from slack_sdk.errors import SlackApiError as SdkError

        delay = 1.0
        for attempt in range(self._attempts):
            last = attempt == self._attempts - 1
            try:
                answer = await call(self.client)
                return dict(answer.data) if isinstance(answer.data, dict) else {}
            except SdkError as exc:
                status = int(getattr(exc.response, "status_code", 0) or 0)
                data = getattr(exc.response, "data", None)
                error = str(data.get("error", "")) if isinstance(data, dict) else ""
                if not (status == 429 or status >= 500) or last:
                    raise SlackApiError(
                        f"Slack refused {what} ({error or status})", error, status
                    ) from None
                wait = _retry_after(getattr(exc.response, "headers", None)) or delay
            except (ClientError, TimeoutError) as exc:
                if last:
                    raise SlackApiError(f"Slack did not answer {what}: {exc}") from None
                wait = delay
            log.warning("slack: %s failed; retrying in %.1f s", what, wait)
            await self._sleep(wait)
            delay = min(delay * 2, 30.0)
        raise AssertionError("unreachable")  # the loop returns or raises


def _retry_after(headers: Any) -> float:
    if not headers:
        return 0.0
    value = next((v for k, v in dict(headers).items() if k.lower() == "retry-after"), None)
    if isinstance(value, list):
        value = value[0] if value else None
    try:
        return min(float(value), 60.0) if value else 0.0
    except ValueError:
        return 0.0
