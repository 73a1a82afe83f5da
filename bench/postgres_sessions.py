"""Sessions and whole turns on PostgreSQL beside SQLite + files, in the same run.

    .venv/bin/python bench/postgres_sessions.py [--runs 200] [--url postgresql://...]

Starts the embedded PostgreSQL of the tests (or uses --url, an empty Lore database),
then for each backend times, p50 and p95: appending one message (durable, as a reply is;
and not, as what the user said is), keeping one streamed chunk of a reply in its draft
(before the channel shows it), `live(key)` on a conversation another handle just
wrote to (the refresh every turn starts with), closing a 20-message session, and a whole
turn through the runtime with a scripted model (the turn lock included on PostgreSQL).
Each PostgreSQL figure is printed beside the local one as a ratio. The embedded server
runs as the tests run it, with fsync off, so its "durable" figures flatter it: give --url
a server with the settings you deploy to compare commits that reach the disk.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests.postgres_server

from lore.clock import FixedClock  # noqa: E402
from lore.config import load_config  # noqa: E402
from lore.llm.scripted import ScriptedProvider  # noqa: E402
from lore.messages import Message  # noqa: E402
from lore.ports.sessions import SessionStore  # noqa: E402
from lore.runtime import Runtime, build  # noqa: E402

NOW = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
MESSAGE: Message = {
    "role": "user",
    "content": "我周五去花莲看妈妈，Мама ждёт в пятницу",
    "author": "john",
}


def percentiles(times: list[float]) -> tuple[float, float]:
    ordered = sorted(times)
    return statistics.median(ordered), ordered[max(int(len(ordered) * 0.95) - 1, 0)]


def timed(runs: int, call: Callable[[int], object]) -> tuple[float, float]:
    times = []
    for i in range(runs):
        start = time.perf_counter()
        call(i)
        times.append((time.perf_counter() - start) * 1000)
    return percentiles(times)


def runtime(home: Path, url: str | None) -> Runtime:
    env = {"LORE_HOME": str(home), "USER": "john"}
    if url:
        env["LORE_DATABASE_URL"] = url
    config = load_config(env=env, flags={"model": "scripted", "extraction.enabled": False})
    model = ScriptedProvider()
    model.default = lambda request: "好的。"
    return build(config, provider=model, clock=FixedClock(NOW))


def measure(lore: Runtime, runs: int) -> dict[str, tuple[float, float]]:
    sessions: SessionStore = lore.sessions
    figures = {}
    session = sessions.live("bench:append")
    figures["append, durable"] = timed(runs, lambda i: session.append([MESSAGE]))
    figures["append, not durable"] = timed(
        runs, lambda i: session.append([MESSAGE], durable=False, touch=False)
    )
    with session.draft(len(session.messages) - 1) as draft:
        figures["one streamed chunk kept as shown"] = timed(runs, lambda i: draft.write("好的，"))
    writer, reader = sessions.live("bench:refresh"), sessions.live("bench:refresh")

    def refresh(i: int) -> None:
        writer.append([MESSAGE])
        start = time.perf_counter()
        sessions.live("bench:refresh")
        refreshed.append((time.perf_counter() - start) * 1000)

    refreshed: list[float] = []
    for i in range(runs):
        refresh(i)
    figures["live(key) after another write"] = percentiles(refreshed)
    del reader

    def close(i: int) -> None:
        live = sessions.live(f"bench:close:{i}")
        live.append([MESSAGE] * 20)
        start = time.perf_counter()
        sessions.close(live, reason="new", ended_at=NOW, zone=UTC, slug="bench")
        closes.append((time.perf_counter() - start) * 1000)

    closes: list[float] = []
    for i in range(max(runs // 4, 10)):
        close(i)
    figures["close, 20 messages"] = percentiles(closes)

    conversation = lore.conversation("bench:turn", emit=lambda event: None)
    turns: list[float] = []

    async def turn_all() -> None:
        for i in range(max(runs // 4, 10)):
            start = time.perf_counter()
            await conversation.send(f"第{i}个问题")
            turns.append((time.perf_counter() - start) * 1000)

    asyncio.run(turn_all())
    figures["turn (scripted model)"] = percentiles(turns)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--url", help="an empty Lore database (default: the embedded server)")
    args = parser.parse_args()
    server = None
    url = args.url
    if not url:
        from tests.postgres_server import EmbeddedPostgres

        server = EmbeddedPostgres().start()
        url = server.create_database()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            local = runtime(Path(tmp) / "local", None)
            pg = runtime(Path(tmp) / "pg", url)
            try:
                on_files = measure(local, args.runs)
                on_pg = measure(pg, args.runs)
            finally:
                local.close()
                pg.close()
    finally:
        if server is not None:
            server.stop()
    print(f"{'ms (p50 / p95)':<32} {'PostgreSQL':>16} {'SQLite + files':>16} {'ratio':>7}")
    for name, (p50, p95) in on_pg.items():
        base50, base95 = on_files[name]
        print(
            f"{name:<32} {p50:>7.2f} / {p95:>6.2f} {base50:>7.2f} / {base95:>6.2f}"
            f" {p50 / base50:>6.1f}×"
        )


if __name__ == "__main__":
    main()
