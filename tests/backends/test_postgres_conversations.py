"""Any worker serves any conversation on PostgreSQL: two runtimes on one database (as two
workers behind a load balancer) take turns in one conversation and never in two at once,
run single-writer jobs once, and a worker killed with SIGKILL mid-reply or mid-turn
leaves what the user saw and frees the conversation."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from lore.backends.postgres.backend import PostgresBackend
from lore.clock import FixedClock
from lore.config import load_config
from lore.llm.scripted import ScriptedProvider
from lore.memory.dream import DreamBusy, run_dream
from lore.messages import Message, content_text
from lore.runtime import Runtime, build

pytestmark = pytest.mark.postgres

SCOPE = "telegram:42"
ROOT = Path(__file__).resolve().parents[2]


def _worker(home: Path, url: str, model: ScriptedProvider, clock: FixedClock) -> Runtime:
    config = load_config(
        env={"LORE_HOME": str(home), "USER": "john", "LORE_DATABASE_URL": url},
        flags={"model": "scripted", "timezone": "Asia/Taipei", "extraction.enabled": False},
    )
    return build(config, provider=model, clock=clock)


@pytest.fixture
async def workers(
    tmp_path: Path, postgres_url: str, clock: FixedClock
) -> AsyncIterator[tuple[Runtime, Runtime]]:
    # Two hosts: each its own home directory, one database between them.
    first = _worker(tmp_path / "host-a", postgres_url, ScriptedProvider(), clock)
    second = _worker(tmp_path / "host-b", postgres_url, ScriptedProvider(), clock)
    yield first, second
    await first.aclose()
    await second.aclose()


def _model(runtime: Runtime) -> ScriptedProvider:
    provider = runtime.provider
    assert isinstance(provider, ScriptedProvider)
    return provider


def _texts(runtime: Runtime, scope: str = SCOPE) -> list[str]:
    return [str(m["content"]) for m in runtime.sessions.live(scope).messages]


async def test_two_workers_take_turns_in_one_conversation_and_each_sees_the_other(
    workers: tuple[Runtime, Runtime],
) -> None:
    a, b = workers
    _model(a).reply("先说第一件事。", delay=0.3)
    _model(b).reply("Второе понял.")
    first = asyncio.create_task(a.conversation(SCOPE, emit=lambda e: None).send("第一件事"))
    await asyncio.sleep(0.05)  # a's turn is under way when b's message arrives
    await b.conversation(SCOPE, emit=lambda e: None).send("И второе")
    await first
    # b's turn waited for a's: its prompt held a's whole exchange, in order.
    asked = [m.get("content") for m in _model(b).requests[-1].messages]
    assert asked[-3:] == ["第一件事", "先说第一件事。", "И второе"]
    expected = ["第一件事", "先说第一件事。", "И второе", "Второе понял."]
    assert _texts(a) == expected and _texts(b) == expected


async def test_turns_of_different_conversations_run_at_once_across_workers(
    workers: tuple[Runtime, Runtime],
) -> None:
    a, b = workers
    _model(a).reply("slow", delay=0.5)
    _model(b).reply("quick")
    slow = asyncio.create_task(a.conversation(SCOPE, emit=lambda e: None).send("慢"))
    await asyncio.sleep(0.05)
    await b.conversation("telegram:43", emit=lambda e: None).send("быстро")
    assert not slow.done()  # b did not wait for another conversation's turn
    await slow
    assert _texts(b, "telegram:43") == ["быстро", "quick"]


async def test_dream_runs_on_one_worker_at_a_time(workers: tuple[Runtime, Runtime]) -> None:
    a, b = workers
    with a.exclusive("dream", None) as held:
        assert held
        with pytest.raises(DreamBusy):
            await run_dream(b)
        with b.exclusive("idle-close", None) as other:
            assert other  # another job's name is free
    with b.exclusive("dream", None) as later:
        assert later


async def test_a_session_closed_by_one_worker_is_fresh_on_the_other(
    workers: tuple[Runtime, Runtime],
) -> None:
    from lore.sessions.closing import close_session

    a, b = workers
    _model(a).reply("好的")
    await a.conversation(SCOPE, emit=lambda e: None).send("记住：周五开会")
    entry = close_session(b, SCOPE)
    assert entry is not None and entry.message_count == 2
    assert _texts(a) == [] and a.sessions.live(SCOPE).meta.session_id != entry.session_id
    assert a.sessions.archive.read_messages(entry)[0][0]["content"] == "记住：周五开会"


# -- workers killed with SIGKILL ----------------------------------------------------------


@pytest.fixture
def killed() -> Iterator[list[subprocess.Popen[str]]]:
    started: list[subprocess.Popen[str]] = []
    yield started
    for process in started:
        if process.poll() is None:
            os.kill(process.pid, signal.SIGKILL)
        process.wait(timeout=30)


def _start(
    script: str, url: str, started: list[subprocess.Popen[str]], *more: str
) -> subprocess.Popen[str]:
    process = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(script), url, *more],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
    )
    started.append(process)
    assert process.stdout is not None
    assert process.stdout.readline().strip() == "ready"
    return process


_STREAMING = """
import sys, time
from lore.backends.postgres.backend import PostgresBackend
from lore.backends.postgres.live import DRAFT_EVERY
pg = PostgresBackend(sys.argv[1])
session = pg.sessions.live("telegram:42")
session.append([{"role": "user", "content": "讲个故事", "timestamp": "2026-11-30T09:00:00+00:00"}])
draft = session.draft(0, why=lambda: {"memories": [7], "files": ["故事.md"]}).__enter__()
draft.write("从前有座山，")
draft.write("山里有座庙")
time.sleep(3 * DRAFT_EVERY)  # the draft is written a few times a second
print("ready", flush=True)
time.sleep(600)
"""


def test_a_reply_streaming_when_its_worker_is_killed_is_kept_as_interrupted(
    postgres_url: str, killed: list[subprocess.Popen[str]]
) -> None:
    worker = _start(_STREAMING, postgres_url, killed)
    other = PostgresBackend(postgres_url)
    try:
        # While it streams, another worker leaves its draft alone.
        assert [m["content"] for m in other.sessions.live(SCOPE).messages] == ["讲个故事"]
        os.kill(worker.pid, signal.SIGKILL)
        worker.wait(timeout=30)
    finally:
        other.close()
    after = PostgresBackend(postgres_url)
    try:
        *_, reply = after.sessions.live(SCOPE).messages
        assert reply == {
            "role": "assistant",
            "content": "从前有座山，山里有座庙",
            "timestamp": "2026-11-30T09:00:00+00:00",
            "interrupted": True,
            "why": {"memories": [7], "files": ["故事.md"]},  # what it rested on, kept too
        }
        assert len(PostgresBackend(postgres_url).sessions.live(SCOPE).messages) == 2  # once
    finally:
        after.close()


# A turn on PostgreSQL whose model streams a reply in two bursts, then hangs: the first
# burst is shown, the stream pauses past a draft write, the second burst is shown.
_TURN_STREAMING = """
import asyncio, sys
from lore.config import load_config
from lore.events import TextDelta
from lore.llm.base import Completion, TextChunk
from lore.runtime import build

class Hanging:
    name = "hanging"
    context_window = 32000
    supports_tools = True

    async def stream(self, request):
        for chunk in ["从前", "有座山，"]:
            yield TextChunk(chunk)
        await asyncio.sleep(1.0)
        for chunk in ["山里", "有座庙"]:
            yield TextChunk(chunk)
        print("shown", flush=True)
        await asyncio.sleep(600)
        yield Completion(text="never")

    async def aclose(self):
        pass

async def main():
    config = load_config(
        env={"LORE_HOME": sys.argv[2], "USER": "john", "LORE_DATABASE_URL": sys.argv[1]},
        flags={"model": "scripted", "extraction.enabled": False},
    )
    lore = build(config, provider=Hanging())
    print("ready", flush=True)
    await lore.conversation("telegram:42", emit=lambda event: None).send("讲个故事")

asyncio.run(main())
"""


def test_a_worker_killed_mid_stream_keeps_the_reply_as_its_draft_last_held_it(
    postgres_url: str, tmp_path: Path, killed: list[subprocess.Popen[str]]
) -> None:
    """Through a real turn: what was shown before the last draft write is kept as the
    interrupted reply; the draft row follows the stream without a chunk per transaction."""
    import psycopg

    worker = _start(_TURN_STREAMING, postgres_url, killed, str(tmp_path / "home"))
    assert worker.stdout is not None
    assert worker.stdout.readline().strip() == "shown"
    # The stream has stopped; the draft catches up within a write interval.
    deadline = time.monotonic() + 10
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        while time.monotonic() < deadline:
            row = conn.execute("SELECT text FROM session_drafts").fetchone()
            if row is not None and row[0] == "从前有座山，山里有座庙":
                break
            time.sleep(0.02)
        else:
            raise AssertionError(f"the draft never held the whole reply: {row}")
    os.kill(worker.pid, signal.SIGKILL)
    worker.wait(timeout=30)
    after = PostgresBackend(postgres_url)
    try:
        user, reply = after.sessions.live(SCOPE).messages
        assert user["content"] == "讲个故事"
        assert reply["content"] == "从前有座山，山里有座庙" and reply["interrupted"] is True
    finally:
        after.close()


def test_a_streamed_reply_is_written_a_few_times_a_second_and_never_by_the_caller(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two hundred chunks in about half a second: a handful of transactions, none on
    the thread that shows the chunks, and the row holds every chunk soon after."""
    from lore.backends.postgres.live import DRAFT_EVERY, PostgresLiveSession, drafts_written

    writes: list[int] = []
    for name in ("start_draft", "extend_draft"):
        original = getattr(PostgresLiveSession, name)

        def counted(
            self: PostgresLiveSession, *args: Any, _original: Any = original, **kw: Any
        ) -> None:
            writes.append(threading.get_ident())
            _original(self, *args, **kw)

        monkeypatch.setattr(PostgresLiveSession, name, counted)
    pg = PostgresBackend(postgres_url)
    try:
        session = pg.sessions.live(SCOPE)
        session.append([{"role": "user", "content": "讲个故事"}])
        with session.draft(0) as draft:
            began = time.monotonic()
            for n in range(200):
                draft.write(f"{n},")
                time.sleep(0.0025)
            streamed = time.monotonic() - began
            time.sleep(3 * DRAFT_EVERY)
            row = pg.db.fetch_one("SELECT text FROM session_drafts WHERE key = %s", (SCOPE,))
            assert row is not None and row["text"] == "".join(f"{n}," for n in range(200))
        assert 2 <= len(writes) <= streamed / DRAFT_EVERY + 3
        assert threading.get_ident() not in writes
        assert drafts_written(timeout=10)  # the writer drops the row once closed
        assert pg.db.fetch_one("SELECT 1 FROM session_drafts") is None
    finally:
        pg.close()


def test_a_draft_read_as_its_turn_ends_is_not_kept_again(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Opening a conversation while its reply is being stored: the draft row read a
    moment before the turn appended its reply and dropped the row is not kept as an
    interrupted second reply (the claim is taken before the row is read)."""
    from lore.backends.postgres.database import PostgresDatabase
    from lore.backends.postgres.live import PostgresLiveSession

    pg = PostgresBackend(postgres_url)
    try:
        turn = pg.sessions.live(SCOPE)
        turn.append(
            [{"role": "user", "content": "讲个故事", "timestamp": "2026-11-30T09:00:00+00:00"}]
        )
        streaming = turn.draft(0)
        streaming.__enter__().write("从前有座山")
        reply: Message = {
            "role": "assistant",
            "content": "从前有座山",
            "timestamp": "2026-11-30T09:00:01+00:00",
        }
        ended = False

        def end_the_turn() -> None:
            nonlocal ended
            if not ended:
                ended = True
                turn.append([reply])
                streaming.__exit__(None, None, None)

        read = PostgresDatabase.fetch_one

        def read_then_the_turn_ends(self: PostgresDatabase, sql: str, *args: object) -> object:
            row = read(self, sql, *args)
            if "session_drafts" in sql:
                end_the_turn()  # between reading the row and claiming the draft
            return row

        monkeypatch.setattr(PostgresDatabase, "fetch_one", read_then_the_turn_ends)
        PostgresLiveSession(pg.db, pg.locks, SCOPE)
        end_the_turn()
        monkeypatch.undo()
        again = PostgresBackend(postgres_url)
        try:
            assert [m["role"] for m in again.sessions.live(SCOPE).messages] == ["user", "assistant"]
        finally:
            again.close()
    finally:
        pg.close()


_MID_TURN = """
import asyncio, sys, time
from lore.backends.postgres.backend import PostgresBackend

async def mid_turn() -> None:
    async with PostgresBackend(sys.argv[1]).sessions.turn("telegram:42"):
        print("ready", flush=True)
        time.sleep(600)

asyncio.run(mid_turn())
"""


async def test_a_turn_waits_for_a_worker_mid_turn_and_goes_on_once_it_is_killed(
    workers: tuple[Runtime, Runtime], postgres_url: str, killed: list[subprocess.Popen[str]]
) -> None:
    a, _ = workers
    holder = _start(_MID_TURN, postgres_url, killed)
    asked_at: list[float] = []

    def answer(request: object) -> str:
        asked_at.append(time.monotonic())
        return "我在。"

    _model(a).respond_with(answer)
    turn = asyncio.create_task(a.conversation(SCOPE, emit=lambda e: None).send("在吗？"))
    await asyncio.sleep(0.3)
    assert not turn.done() and asked_at == []  # waiting for the other worker's turn
    killed_at = time.monotonic()
    os.kill(holder.pid, signal.SIGKILL)
    outcome = await asyncio.wait_for(turn, timeout=60)
    assert outcome.text == "我在。" and asked_at[0] > killed_at


_APPENDER = """
import sys
from lore.backends.postgres.backend import PostgresBackend
pg = PostgresBackend(sys.argv[1])
name = sys.argv[2]
session = pg.sessions.live("telegram:42")
print("ready", flush=True)
sys.stdin.readline()
for i in range(40):
    session.append([{"role": "user", "content": f"{name} сообщение {i}"}], durable=i % 2 == 0)
    if i % 10 == 0:
        session.mark(len(session.messages) - 1, seen=name)
print("done", flush=True)
"""


def test_workers_appending_to_one_conversation_at_once_lose_and_reorder_nothing(
    postgres_url: str, killed: list[subprocess.Popen[str]]
) -> None:
    names = ["甲", "乙", "丙"]
    appenders = []
    for name in names:
        process = subprocess.Popen(
            [sys.executable, "-c", textwrap.dedent(_APPENDER), postgres_url, name],
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
        )
        killed.append(process)
        assert process.stdout is not None and process.stdout.readline().strip() == "ready"
        appenders.append(process)
    for process in appenders:  # all at once
        assert process.stdin is not None
        process.stdin.write("go\n")
        process.stdin.flush()
    for process in appenders:
        assert process.stdout is not None and process.stdout.readline().strip() == "done"
    pg = PostgresBackend(postgres_url)
    try:
        messages = pg.sessions.live(SCOPE).messages
    finally:
        pg.close()
    assert len(messages) == 3 * 40
    for name in names:
        own = [m["content"] for m in messages if content_text(m["content"]).startswith(name)]
        assert own == [f"{name} сообщение {i}" for i in range(40)]  # each in its own order
        assert sum(m.get("seen") == name for m in messages) == 4  # every mark applied


def test_forget_everywhere_erases_a_phrase_from_sessions_and_history_on_postgres(
    tmp_path: Path,
    postgres_url: str,
    clock: FixedClock,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from lore.cli import main
    from lore.sessions.closing import close_session

    home = tmp_path / "host-a"
    lore = _worker(home, postgres_url, ScriptedProvider(), clock)
    said: list[Message] = [
        {"role": "user", "content": "我的医生是王大夫，每周五见面"},
        {"role": "assistant", "content": "好的，王大夫每周五。"},
    ]
    lore.session(SCOPE).append(said)
    entry = close_session(lore, SCOPE)
    assert entry is not None
    lore.session(SCOPE).append([{"role": "user", "content": "王大夫 сказал отдыхать"}])
    lore.history.append(SCOPE, "Anna sees 王大夫 on Fridays", now=clock.now())
    lore.close()
    monkeypatch.setenv("LORE_HOME", str(home))
    monkeypatch.setenv("LORE_DATABASE_URL", postgres_url)
    monkeypatch.setenv("LORE_USER", "john")

    assert main(["forget", "--everywhere", "--phrase", "王大夫"]) == 0
    shown = capsys.readouterr().out
    assert "PostgreSQL: 3 session records" in shown  # two archived messages, one live
    assert "PostgreSQL: 1 history entry" in shown
    assert main(["forget", "--everywhere", "--phrase", "王大夫", "--yes"]) == 0
    assert "no copy is left" in capsys.readouterr().out

    after = PostgresBackend(postgres_url)
    try:
        live = [m["content"] for m in after.sessions.live(SCOPE).messages]
        assert live == ["[forgotten] сказал отдыхать"]
        (archived,) = after.sessions.archive.entries()
        assert [m["content"] for m in after.sessions.archive.read_messages(archived)[0]] == [
            "我的医生是[forgotten]，每周五见面",
            "好的，[forgotten]每周五。",
        ]
        assert [e.content for e in after.history.entries()] == ["Anna sees [forgotten] on Fridays"]
    finally:
        after.close()


def test_a_refresh_between_a_writes_commit_and_its_own_update_adds_each_line_once(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The after-turn indexing refreshes the conversation's handle from a worker thread;
    landing between a write's commit and the write's own update of the handle, it must
    not leave the line there twice (a reply seen twice in every later history)."""
    from lore.backends.postgres.live import PostgresLiveSession

    pg = PostgresBackend(postgres_url)
    try:
        live = pg.sessions.live(SCOPE)
        live.append([{"role": "user", "content": "привет", "timestamp": "2026-11-30T09:00:00Z"}])
        apply = PostgresLiveSession._apply
        landed = False

        def refresh_lands_first(self: PostgresLiveSession, rows: list[object]) -> None:
            nonlocal landed
            if not landed and rows and all(isinstance(r, dict) and "body" in r for r in rows):
                landed = True
                self.refresh()  # another thread's refresh, just after the commit
            apply(self, rows)

        monkeypatch.setattr(PostgresLiveSession, "_apply", refresh_lands_first)
        live.append([{"role": "assistant", "content": "你好", "timestamp": "2026-11-30T09:00:01Z"}])
        monkeypatch.undo()
        assert landed
        assert [m["role"] for m in live.messages] == ["user", "assistant"]
        live.refresh()
        assert [m["role"] for m in live.messages] == ["user", "assistant"]
    finally:
        pg.close()


def test_threads_opening_one_conversation_share_one_handle(postgres_url: str) -> None:
    import threading

    pg = PostgresBackend(postgres_url)
    try:
        handles: list[object] = []
        start = threading.Barrier(4)

        def open_it() -> None:
            start.wait()
            handles.append(pg.sessions.live(SCOPE))

        threads = [threading.Thread(target=open_it) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
        assert len(handles) == 4 and len({id(h) for h in handles}) == 1
    finally:
        pg.close()
