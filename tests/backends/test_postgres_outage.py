"""PostgreSQL stopped under a running Lore (a real server halted, then started again):
the gateway keeps answering what needs no database, says 503 with Retry-After for what
does, and after-turn work that met the outage runs again once the server is back."""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import AsyncIterator, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

from lore.backends.postgres.live import drafts_written
from lore.config import load_config
from lore.errors import DatabaseUnavailable
from lore.llm.base import ChatRequest, Completion, StreamEvent, TextChunk
from lore.llm.scripted import ScriptedProvider, Step
from lore.runtime import Runtime, build
from tests.gateway_server import running_gateway
from tests.postgres_server import EmbeddedPostgres, PostgresUnavailable

pytestmark = pytest.mark.postgres

SCOPE = "api:john"
OUTAGE = 10.0  # seconds the server is down


@pytest.fixture(scope="module")
def server() -> Iterator[EmbeddedPostgres]:
    """A server of this module's own: halting the shared one would fail other tests."""
    try:
        own = EmbeddedPostgres().start()
    except PostgresUnavailable as exc:
        pytest.skip(f"PostgreSQL cannot start here: {exc}")
    yield own
    own.stop()


def _runtime(home: Path, url: str, model: ScriptedProvider, *, extraction: bool) -> Runtime:
    config = load_config(
        env={"LORE_HOME": str(home), "USER": "john", "LORE_DATABASE_URL": url},
        flags={
            "model": "scripted",
            "timezone": "UTC",
            "extraction.enabled": extraction,
            "api.requests_per_minute": 0,
        },
    )
    return build(config, provider=model)


def _chat(http: httpx.Client, text: str) -> httpx.Response:
    body = {"model": "lore", "user": "john", "messages": [{"role": "user", "content": text}]}
    return http.post("/v1/chat/completions", json=body)


def test_the_gateway_answers_through_an_outage_and_routes_needing_the_database_say_503(
    server: EmbeddedPostgres, tmp_path: Path
) -> None:
    model = ScriptedProvider()
    model.default = Step(text="Here.")
    lore = _runtime(tmp_path / "home", server.create_database(), model, extraction=False)
    with running_gateway(lore) as gateway, gateway.client() as http:
        assert _chat(http, "hello").status_code == 200
        assert http.get("/api/memories?limit=50").status_code == 200
        server.halt()
        try:
            health: list[float] = []
            reports: list[dict[str, Any]] = []
            answers: list[httpx.Response] = []
            # Routes that need the database are asked all through the outage, beside the
            # probes: none of them may hold up the event loop the probes need.
            with ThreadPoolExecutor(2) as pool:
                ends = time.monotonic() + OUTAGE
                while time.monotonic() < ends:
                    asked = [
                        pool.submit(http.get, "/api/memories?limit=50"),
                        pool.submit(_chat, http, "hi"),
                    ]
                    began = time.perf_counter()
                    with gateway.client() as probe:
                        said = probe.get("/health", timeout=1.0)
                    health.append(time.perf_counter() - began)
                    assert said.status_code == 200
                    reports.append(said.json())
                    answers += [future.result(timeout=5) for future in asked]
                    time.sleep(0.25)
            assert max(health) < 0.5, f"/health took {max(health):.2f} s"
            # Once a call has met the outage, /health says so: degraded, since when, why.
            down = [report for report in reports if report["status"] == "degraded"]
            assert down, reports[-1]
            database = down[-1]["database"]
            assert database["state"] == "unreachable" and database["since"] <= time.time()
            assert database["reason"] and "\n" not in database["reason"]
            assert database["where"].startswith("postgresql://postgres@127.0.0.1:")
            # The scrape still answers, saying the database is down.
            scraped = http.get("/metrics")
            assert scraped.status_code == 200, scraped.text
            assert "lore_database_up 0.0" in scraped.text
            assert "lore_outbox_pending" not in scraped.text
            assert {answer.status_code for answer in answers} == {503}
            for answer in answers:
                assert answer.headers["Retry-After"].isdigit()
                message = answer.json()["error"]["message"]
                assert "PostgreSQL" in message and "\n" not in message
        finally:
            server.resume()
        # Back: the same routes work again within a few seconds.
        deadline = time.monotonic() + 15
        while http.get("/api/memories?limit=50").status_code != 200:
            assert time.monotonic() < deadline, "the gateway did not recover"
            time.sleep(0.2)
        back = http.get("/health").json()
        assert back["status"] == "ok" and back["database"]["state"] == "ok", back
        reply = _chat(http, "still there?")
        assert reply.status_code == 200, reply.text
        assert reply.json()["choices"][0]["message"]["content"] == "Here."
    asyncio.run(lore.aclose())


async def test_after_turn_work_that_met_the_outage_runs_again_once_the_server_is_back(
    server: EmbeddedPostgres, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The server goes down as extraction's model answers: the after-turn jobs that meet
    it (indexing the turn, at least: a call on the event loop fails at once) wait, each
    logged in one line without a traceback, and run again once the server is back;
    nothing is lost."""
    model = ScriptedProvider()
    back = threading.Event()

    def answer(request: ChatRequest) -> Step:
        if "<memories>" in str(request.messages[-1].get("content", "")):  # extraction
            if not back.is_set():
                server.halt()  # as the model answers, the database goes away

                def resume() -> None:
                    time.sleep(OUTAGE / 4)
                    server.resume()
                    back.set()

                threading.Thread(target=resume, daemon=True).start()
            return Step(text='[{"op": "add", "content": "John moves to Hualien", "kind": "fact"}]')
        return Step(text="Noted.")

    model.default = answer
    lore = _runtime(tmp_path / "home", server.create_database(), model, extraction=True)
    caplog.set_level(logging.INFO, logger="lore")
    try:
        outcome = await lore.conversation(SCOPE, emit=lambda event: None).send(
            "I move to Hualien in March"
        )
        assert outcome.ok
        await asyncio.wait_for(lore.background.drain(), timeout=60)
        assert back.is_set()
        now = lore.clock.now()
        assert [m.content for m in lore.memory.active(SCOPE, now=now)] == ["John moves to Hualien"]
        waited = [r for r in caplog.records if "waits for the database" in r.getMessage()]
        assert waited and all(r.exc_info is None for r in waited)
        assert all("\n" not in r.getMessage() for r in waited)
        assert not [r for r in caplog.records if r.msg == "background job %s failed: %s"]
        done = [r for r in caplog.records if r.msg.endswith("done once the database was back")]
        assert {_job(r) for r in done} == {_job(r) for r in waited}  # each, once back
    finally:
        if not back.wait(30):
            server.resume()
        await lore.aclose()


def _job(record: logging.LogRecord) -> object:
    """The job a background log line is about (its first argument)."""
    assert isinstance(record.args, tuple)
    return record.args[0]


class _PausingModel(ScriptedProvider):
    """Streams half a reply, waits for `go_on`, then streams the rest."""

    def __init__(self) -> None:
        super().__init__()
        self.halfway = asyncio.Event()
        self.go_on = asyncio.Event()

    async def stream(self, request: ChatRequest) -> AsyncIterator[StreamEvent]:
        for chunk in ["The capital ", "of Japan "]:
            yield TextChunk(chunk)
        self.halfway.set()
        await self.go_on.wait()
        yield TextChunk("is Tokyo.")
        yield Completion(text="The capital of Japan is Tokyo.")


async def test_a_reply_streaming_through_an_outage_is_stored_whole_and_the_loop_goes_on(
    server: EmbeddedPostgres, tmp_path: Path
) -> None:
    """The server goes away mid-stream and comes back: the draft's writer and the reply's
    append wait off the event loop, and the reply is stored once the server is back."""
    model = _PausingModel()
    lore = _runtime(tmp_path / "home", server.create_database(), model, extraction=False)
    lateness: list[float] = []

    async def tick() -> None:
        while True:
            asked = time.perf_counter()
            await asyncio.sleep(0.01)
            lateness.append(time.perf_counter() - asked - 0.01)

    try:
        turn = asyncio.create_task(
            lore.conversation(SCOPE, emit=lambda event: None).send("What is the capital of Japan?")
        )
        await model.halfway.wait()
        await asyncio.sleep(0.6)  # the draft holds the first half
        ticker = asyncio.create_task(tick())
        await asyncio.to_thread(server.halt)
        postgres = lore.postgres
        assert postgres is not None
        # The first call to meet the lost connection fails (a busy server's scheduler, a
        # page); from then on calls wait for the server instead.
        with pytest.raises(DatabaseUnavailable):
            await asyncio.to_thread(postgres.db.fetch_one, "SELECT 1")
        model.go_on.set()  # the rest is shown while the server is down
        await asyncio.sleep(OUTAGE / 4)
        await asyncio.to_thread(server.resume)
        outcome = await asyncio.wait_for(turn, timeout=30)
        ticker.cancel()
        assert outcome.ok
        assert max(lateness) < 0.3, f"the loop stalled {max(lateness):.2f} s"
        said, reply = lore.session(SCOPE).messages
        assert reply["content"] == "The capital of Japan is Tokyo." and "interrupted" not in reply
        assert await asyncio.to_thread(drafts_written, 10)  # its writer has dropped the row
        assert postgres.db.fetch_one("SELECT 1 FROM session_drafts") is None
    finally:
        model.go_on.set()
        await lore.aclose()


async def test_lore_serves_background_loops_wait_out_an_outage_in_one_line_a_round(
    server: EmbeddedPostgres, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The reminder scheduler and the search backlog's embedding go on through an outage,
    each saying so in one line a round, and deliver what fell due once it is back."""
    from datetime import timedelta

    from lore.reminders.delivery import Delivery
    from lore.reminders.scheduler import Scheduler
    from lore.search import embed_backlog_forever

    lore = _runtime(
        tmp_path / "home", server.create_database(), ScriptedProvider(), extraction=False
    )
    delivered: list[str] = []
    got = asyncio.Event()

    async def deliver(due: Delivery) -> None:
        delivered.append(due.text)
        got.set()

    scheduler = Scheduler(lore.reminders, lore.clock, deliver, max_sleep=0.1)
    caplog.set_level(logging.WARNING, logger="lore")
    loops = [
        asyncio.create_task(scheduler.run_forever()),
        asyncio.create_task(embed_backlog_forever(lore, idle_seconds=0.1)),
    ]
    try:
        await asyncio.sleep(0.3)
        await asyncio.to_thread(server.halt)
        try:
            await asyncio.sleep(1.0)
            assert not any(loop.done() for loop in loops)
        finally:
            await asyncio.to_thread(server.resume)
        due = lore.clock.now() + timedelta(seconds=1)
        deadline = time.monotonic() + 15
        while True:  # the first calls after the outage may still meet it
            try:
                lore.reminders.add(
                    SCOPE, "john", "water the plants", due, timezone="UTC", now=lore.clock.now()
                )
                break
            except DatabaseUnavailable:
                assert time.monotonic() < deadline
                await asyncio.sleep(0.2)
        scheduler.wake()
        await asyncio.wait_for(got.wait(), timeout=15)
        assert delivered == ["water the plants"]
        assert not any(loop.done() for loop in loops)
        said = [r for r in caplog.records if "waits for the database" in r.getMessage()]
        assert {r.name for r in said} == {"lore.reminders.scheduler", "lore.search"}
        assert all(r.exc_info is None and "\n" not in r.getMessage() for r in said)
    finally:
        scheduler.stop()
        for loop in loops:
            loop.cancel()
        await asyncio.gather(*loops, return_exceptions=True)
        await lore.aclose()
