"""`lore serve` workers on one PostgreSQL, the busiest killed with SIGKILL while reminders
fall due: every reminder reaches its channel and its conversation once (`make torture`;
the full-size run is `make bench-workers`)."""

from __future__ import annotations

import argparse
import os

import pytest

from lore.cli.bench import load_bench
from tests.postgres_server import EmbeddedPostgres, PostgresUnavailable, shared_server

pytestmark = [pytest.mark.torture, pytest.mark.postgres]

ROUNDS = max(1, int(os.environ.get("LORE_TORTURE_RUNS", "100")) // 50)


@pytest.fixture
def postgres_server() -> EmbeddedPostgres:
    try:
        return shared_server()
    except PostgresUnavailable as exc:
        pytest.skip(f"PostgreSQL cannot start here: {exc}")


def test_workers_killed_mid_delivery_lose_and_repeat_no_reminder(
    postgres_server: EmbeddedPostgres, capsys: pytest.CaptureFixture[str]
) -> None:
    bench = load_bench("pg_workers")
    args = argparse.Namespace(
        reminders=300, window=8.0, scopes=12, lead=8.0, lease=3.0, workers=3, send_ms=20.0
    )
    for _ in range(ROUNDS):
        result = bench.run(args, postgres_server.create_database(), 3, True, "PostgreSQL")
        with capsys.disabled():
            print(f"\n{bench.render([result])}")
        assert result.killed
        assert (result.misses, result.session_duplicates) == (0, 0)
        assert result.in_sessions == result.outbox_delivered == result.distinct == 300
