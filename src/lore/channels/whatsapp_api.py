"""The WhatsApp Cloud API's one call Lore makes, over plain httpx: send a text message
from the business number (`POST /{phone-number-id}/messages` on the Graph API).

A refusal is a `WhatsAppApiError` with the HTTP status and Graph's error code; 429 and
5xx are retried with backoff (honouring Retry-After), nothing else is: Graph's code
131047 means the person's 24-hour window is closed, which no retry opens.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import httpx

from lore.errors import LoreError

if TYPE_CHECKING:
    from lore.config import WhatsAppConfig

__all__ = [
    "MAX_BODY",
    "MAX_TEXT",
    "WEBHOOK_PATH",
    "WINDOW_CLOSED",
    "WhatsAppApi",
    "WhatsAppApiError",
]

log = logging.getLogger(__name__)

MAX_TEXT = 4096  # characters in one text message's body
MAX_BODY = 1_000_000  # bytes of a webhook call; Meta's are a few KB
WEBHOOK_PATH = "/whatsapp/webhook"  # where the gateway takes Meta's calls
WINDOW_CLOSED = 131047  # Graph's "Re-engagement message": more than 24 h since they wrote
_TIMEOUT = 15.0

Sleep = Callable[[float], Awaitable[None]]


class WhatsAppApiError(LoreError):
    """The Graph API refused a call, or did not answer; `status` 0 when it did not."""

    def __init__(self, message: str, status: int = 0, code: int = 0) -> None:
        super().__init__(message)
        self.status = status
        self.code = code


class WhatsAppApi:
    def __init__(
        self,
        settings: WhatsAppConfig,
        *,
        client: httpx.AsyncClient | None = None,
        sleep: Sleep = asyncio.sleep,
        attempts: int = 4,
    ) -> None:
        self.settings = settings
        self._client = client
        self._sleep = sleep
        self._attempts = attempts

    def _http(self) -> httpx.AsyncClient:
        if self._client is None:
            self._client = httpx.AsyncClient(
                base_url=self.settings.api_base_url.rstrip("/") + "/",
                headers={"Authorization": f"Bearer {self.settings.access_token}"},
                timeout=_TIMEOUT,
            )
        return self._client

    async def aclose(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            await client.aclose()

    async def send_text(self, to: str, text: str, *, reply_to: str = "") -> str:
        """Send `text` (at most MAX_TEXT characters) to the WhatsApp id `to`, quoting the
        message `reply_to` if given; the id of the message sent."""
        body: dict[str, Any] = {
            "messaging_product": "whatsapp",
            "recipient_type": "individual",
            "to": to,
            "type": "text",
            "text": {"preview_url": False, "body": text},
        }
        if reply_to:
            body["context"] = {"message_id": reply_to}
        answer = await self._post(f"{self.settings.phone_number_id}/messages", body)
        messages = answer.get("messages") or [{}]
        return str(messages[0].get("id", ""))

    async def _post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        delay = 1.0
        for attempt in range(self._attempts):
            last = attempt == self._attempts - 1
            try:
                response = await self._http().post(path, json=body)
            except httpx.HTTPError as exc:
                if last:
                    raise WhatsAppApiError(f"WhatsApp did not answer: {exc}") from None
                wait = delay
            else:
                status = response.status_code
                if status < 300:
                    answer: dict[str, Any] = response.json()
                    return answer
                if not (status == 429 or status >= 500) or last:
                    raise _refusal(response)
                wait = _retry_after(response.headers) or delay
            log.warning("whatsapp: sending failed; retrying in %.1f s", wait)
            await self._sleep(wait)
            delay = min(delay * 2, 30.0)
        raise AssertionError("unreachable")  # the loop returns or raises


def _refusal(response: httpx.Response) -> WhatsAppApiError:
    """Graph's error as one line: its code, title and details."""
    try:
        error = response.json().get("error") or {}
    except ValueError:
        error = {}
    code = int(error.get("code") or 0)
    details = (error.get("error_data") or {}).get("details") or ""
    message = str(error.get("message") or response.reason_phrase)
    shown = f"{message}: {details}" if details else message
    return WhatsAppApiError(
        f"WhatsApp refused the message ({response.status_code}, code {code}): {shown}",
        response.status_code,
        code,
    )


def _retry_after(headers: httpx.Headers) -> float:
    value = headers.get("Retry-After")
    try:
        return min(float(value), 60.0) if value else 0.0
    except ValueError:
        return 0.0
