"""Retrying a model stream on transient failures, but never after the user saw text.

Decisions use the error class (`ProviderError.transient`, set from the HTTP status),
never the message text.
"""

from __future__ import annotations

import asyncio
import email.utils
import logging
import math
import random
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from lore.errors import ProviderError
from lore.llm.base import StreamEvent

if TYPE_CHECKING:
    from lore.config import Config

__all__ = [
    "RetryPolicy",
    "Sleep",
    "parse_retry_after",
    "retry_after_from_headers",
    "stream_with_retry",
]

log = logging.getLogger(__name__)

Sleep = Callable[[float], Awaitable[None]]


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how long to wait before asking the provider again."""

    max_retries: int = 3
    base_delay: float = 1.0
    max_delay: float = 30.0
    # A server may ask for a long pause; wait at most this long before the next try (a
    # user is waiting), so an unreasonable Retry-After costs a minute, not an hour.
    max_retry_after: float = 60.0
    # Fraction of the backoff that is randomised, so many clients do not retry in step.
    jitter: float = 0.5
    rng: Callable[[], float] = field(default=random.random, compare=False, repr=False)

    @classmethod
    def from_config(cls, config: Config) -> RetryPolicy:
        return cls(max_retries=max(0, config.max_retries))

    def should_retry(self, error: ProviderError, attempt: int) -> bool:
        """`attempt` counts the retries already made (0 before the first retry)."""
        return error.transient and attempt < self.max_retries

    def delay_for(self, error: ProviderError, attempt: int) -> float:
        if error.retry_after is not None:
            return max(0.0, min(error.retry_after, self.max_retry_after))
        backoff = min(self.max_delay, self.base_delay * (2.0**attempt))
        return backoff * (1.0 - self.jitter * self.rng())


async def stream_with_retry(
    open_stream: Callable[[], AsyncIterator[StreamEvent]],
    policy: RetryPolicy,
    sleep: Sleep = asyncio.sleep,
    *,
    on_retry: Callable[[ProviderError, float], None] | None = None,
) -> AsyncIterator[StreamEvent]:
    """Yield the events of `open_stream()`, reopening it after a transient failure.

    Once any event has been yielded the reply is committed: a later failure is raised
    as is, because retrying would show the user the same text twice.
    """
    attempt = 0
    while True:
        committed = False
        stream = open_stream()
        try:
            async for event in stream:
                committed = True
                yield event
            return
        except ProviderError as exc:
            if committed or not policy.should_retry(exc, attempt):
                raise
            delay = policy.delay_for(exc, attempt)
            log.info("retrying after %s (attempt %d, waiting %.1fs)", exc, attempt + 1, delay)
            if on_retry is not None:
                on_retry(exc, delay)
        finally:
            aclose = getattr(stream, "aclose", None)
            if aclose is not None:
                await aclose()
        attempt += 1
        await sleep(delay)


def parse_retry_after(value: str | None, *, now: datetime | None = None) -> float | None:
    """Seconds to wait from a Retry-After value: delta-seconds or an HTTP-date."""
    if not value or not value.strip():
        return None
    text = value.strip()
    try:
        seconds = float(text)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(text)
        except (TypeError, ValueError, IndexError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        seconds = (when - (now or datetime.now(UTC))).total_seconds()
    if not math.isfinite(seconds):
        return None
    return max(0.0, seconds)


def retry_after_from_headers(headers: Mapping[str, str]) -> float | None:
    """Read `retry-after-ms` (OpenAI) or `retry-after`; header names are case-insensitive."""
    lowered = {key.lower(): value for key, value in headers.items()}
    millis = parse_retry_after(lowered.get("retry-after-ms"))
    if millis is not None:
        return millis / 1000.0
    return parse_retry_after(lowered.get("retry-after"))
