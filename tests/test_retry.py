"""Retrying transient provider failures: only before text is shown, decided by class."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest

from lore.config import Config
from lore.errors import (
    AuthenticationError,
    BadRequestError,
    ProviderConnectionError,
    ProviderError,
    ProviderServerError,
    RateLimitError,
)
from lore.llm.base import Completion, StreamEvent, TextChunk
from lore.llm.retry import (
    RetryPolicy,
    parse_retry_after,
    retry_after_from_headers,
    stream_with_retry,
)


class Sleeps:
    """An injected sleep that records how long it was asked to wait, and never waits."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


def attempts(
    *outcomes: ProviderError | str,
) -> tuple[Callable[[], AsyncIterator[StreamEvent]], list[int]]:
    """A stream opener whose n-th opening fails with, or replies with, the n-th outcome."""
    opened: list[int] = []

    async def open_stream() -> AsyncIterator[StreamEvent]:
        outcome = outcomes[len(opened)]
        opened.append(1)
        if isinstance(outcome, ProviderError):
            raise outcome
        yield TextChunk(outcome)
        yield Completion(text=outcome)

    return open_stream, opened


async def collect(stream: AsyncIterator[StreamEvent]) -> list[StreamEvent]:
    return [event async for event in stream]


NO_JITTER = RetryPolicy(rng=lambda: 0.0)


async def test_transient_failure_before_text_is_retried_into_one_reply() -> None:
    opener, opened = attempts(ProviderServerError("down", status=503), "hello")
    sleeps = Sleeps()
    events = await collect(stream_with_retry(opener, NO_JITTER, sleeps))
    assert events == [TextChunk("hello"), Completion(text="hello")]
    assert len(opened) == 2
    assert sleeps.delays == [1.0]


@pytest.mark.parametrize(
    "error",
    [
        RateLimitError("slow down", status=429),
        ProviderServerError("bad gateway", status=502),
        ProviderServerError("overloaded", status=529),
        ProviderConnectionError("refused"),
    ],
)
async def test_every_transient_class_is_retried(error: ProviderError) -> None:
    opener, opened = attempts(error, "ok")
    await collect(stream_with_retry(opener, NO_JITTER, Sleeps()))
    assert len(opened) == 2


@pytest.mark.parametrize(
    "error",
    [
        AuthenticationError("bad key", status=401),
        BadRequestError("bad request", status=400),
        ProviderError("unknown"),
    ],
)
async def test_client_errors_are_never_retried(error: ProviderError) -> None:
    opener, opened = attempts(error, "never")
    sleeps = Sleeps()
    with pytest.raises(type(error)):
        await collect(stream_with_retry(opener, NO_JITTER, sleeps))
    assert len(opened) == 1
    assert sleeps.delays == []


async def test_backoff_doubles_and_gives_up_after_max_retries() -> None:
    failures = [ProviderServerError("down", status=503) for _ in range(4)]
    opener, opened = attempts(*failures)
    sleeps = Sleeps()
    with pytest.raises(ProviderServerError):
        await collect(stream_with_retry(opener, NO_JITTER, sleeps))
    assert len(opened) == 4
    assert sleeps.delays == [1.0, 2.0, 4.0]


async def test_error_after_text_is_not_retried() -> None:
    opened: list[int] = []

    async def open_stream() -> AsyncIterator[StreamEvent]:
        opened.append(1)
        yield TextChunk("half a rep")
        raise ProviderConnectionError("connection reset")

    seen: list[StreamEvent] = []
    with pytest.raises(ProviderConnectionError):
        async for event in stream_with_retry(open_stream, NO_JITTER, Sleeps()):
            seen.append(event)
    assert seen == [TextChunk("half a rep")]
    assert len(opened) == 1


async def test_retry_after_is_used_as_the_delay_and_capped() -> None:
    opener, _ = attempts(
        RateLimitError("slow", status=429, retry_after=7.0),
        RateLimitError("slower", status=429, retry_after=3600.0),
        "ok",
    )
    sleeps = Sleeps()
    await collect(stream_with_retry(opener, NO_JITTER, sleeps))
    assert sleeps.delays == [7.0, 60.0]


def test_backoff_is_capped_and_jittered_downward() -> None:
    policy = RetryPolicy(max_retries=20, rng=lambda: 1.0, jitter=0.5)
    error = ProviderServerError("down", status=503)
    assert policy.delay_for(error, 0) == 0.5
    assert policy.delay_for(error, 10) == 15.0
    assert RetryPolicy(rng=lambda: 0.0).delay_for(error, 10) == 30.0


def test_policy_takes_max_retries_from_config(tmp_path: Path) -> None:
    assert RetryPolicy.from_config(Config(home=tmp_path, max_retries=5)).max_retries == 5


async def test_zero_max_retries_disables_retrying() -> None:
    opener, opened = attempts(ProviderServerError("down", status=503), "ok")
    with pytest.raises(ProviderServerError):
        await collect(stream_with_retry(opener, RetryPolicy(max_retries=0), Sleeps()))
    assert len(opened) == 1


async def test_on_retry_hears_about_each_retry() -> None:
    opener, _ = attempts(RateLimitError("slow", status=429, retry_after=2.0), "ok")
    heard: list[tuple[int | None, float]] = []
    await collect(
        stream_with_retry(
            opener, NO_JITTER, Sleeps(), on_retry=lambda e, d: heard.append((e.status, d))
        )
    )
    assert heard == [(429, 2.0)]


def test_retry_after_parses_seconds_and_http_dates() -> None:
    now = datetime(2026, 11, 30, 9, 0, 0, tzinfo=UTC)
    assert parse_retry_after("12") == 12.0
    assert parse_retry_after(" 1.5 ") == 1.5
    assert parse_retry_after("Mon, 30 Nov 2026 09:00:20 GMT", now=now) == 20.0
    assert parse_retry_after("Mon, 30 Nov 2026 08:00:00 GMT", now=now) == 0.0
    assert parse_retry_after("-5") == 0.0
    assert parse_retry_after("soon") is None
    assert parse_retry_after("") is None
    assert parse_retry_after(None) is None


def test_retry_after_headers_prefer_milliseconds_and_ignore_case() -> None:
    assert retry_after_from_headers({"Retry-After": "3"}) == 3.0
    assert retry_after_from_headers({"retry-after-ms": "250", "retry-after": "3"}) == 0.25
    assert retry_after_from_headers({}) is None
