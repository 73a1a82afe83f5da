"""`lore migrate --to URL`: a SQLite home copied into PostgreSQL without loss, each table
compared by count and content hash, and refused (changing nothing) when the target
already holds data; `lore migrate --from URL` copies it back into an empty home."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from lore.backends.local.database import Database
from lore.backends.local.memories import SQLiteMemoryStore
from lore.backends.local.reminders import SQLiteReminderStore
from lore.backends.local.tasks import SQLiteTaskStore
from lore.backends.postgres.backend import PostgresBackend
from lore.cli import main
from lore.ports.tasks import run_item

pytestmark = pytest.mark.postgres

NOW = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
HOME = "cli:default"
GROUP = "line:group:7"


@pytest.fixture
def sqlite_home(home: Path) -> Path:
    db = Database(home / "lore.db")
    memories, reminders = SQLiteMemoryStore(db), SQLiteReminderStore(db)
    old, _ = memories.remember(HOME, "John lives in Taipei", kind="profile", author="john",
                               via="tool", now=NOW)  # fmt: skip
    memories.supersede(HOME, old.id, "John lives in 花莲", author="john", via="tool", now=NOW)
    memories.remember(GROUP, "Мама живёт в Москве", keywords=["семья"], author="anna",
                      via="tool", now=NOW, expires_at=NOW + timedelta(days=9))  # fmt: skip
    gone, _ = memories.remember(HOME, "a secret plan", author="john", via="cli", now=NOW)
    memories.forget(HOME, gone.id, by="john", via="cli", now=NOW)
    reminders.add(HOME, "john", "喝水", NOW, timezone="Asia/Taipei", now=NOW,
                  recurrence="every 1h", channel="cli")  # fmt: skip
    reminders.add(GROUP, "anna", "позвонить маме", NOW + timedelta(days=1),
                  timezone="Europe/Moscow", now=NOW)  # fmt: skip
    reminders.claim_due(NOW + timedelta(seconds=5))
    tasks = SQLiteTaskStore(db)
    tasks.add(HOME, "john", "看看天气", NOW, timezone="Asia/Taipei", now=NOW,
              recurrence="daily 08:00", max_rounds=2)  # fmt: skip
    (run,) = tasks.claim_due(NOW + timedelta(seconds=5))
    tasks.lease_runs(owner="w", now=NOW + timedelta(seconds=5), seconds=60)
    tasks.fail_run(run.id, owner="w", now=NOW + timedelta(seconds=9), error="ошибка модели",
                   item=run_item(run, "could not run", kind="task_failed", now=NOW))  # fmt: skip
    db.close()
    return home


def test_a_sqlite_home_is_copied_whole_and_compared_table_by_table(
    sqlite_home: Path, postgres_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    db = Database(sqlite_home / "lore.db")
    local_memories, local_reminders = SQLiteMemoryStore(db), SQLiteReminderStore(db)
    before = {
        "export": [local_memories.export(s) for s in (HOME, GROUP)],
        "history": local_memories.history(HOME, 1),
        "changes": local_memories.recent_changes(HOME, limit=50),
        "reminders": [local_reminders.list(s, include_done=True) for s in (HOME, GROUP)],
        "outbox": local_reminders.outbox.items(HOME),
        "tasks": SQLiteTaskStore(db).list(HOME),
    }
    db.close()

    assert main(["migrate", "--to", postgres_url]) == 0
    out = capsys.readouterr().out
    tables = (("memories", 4), ("memory_audit", 5), ("reminders", 2), ("outbox", 2),
              ("tasks", 1), ("task_runs", 1))  # fmt: skip
    for table, rows in tables:
        assert f"{table:<13} {rows:>8} rows" in out
    assert out.count(" same") == 9  # the six tables, live sessions, archive, history

    pg = PostgresBackend(postgres_url)
    try:
        assert [pg.memory.export(s) for s in (HOME, GROUP)] == before["export"]
        assert pg.memory.history(HOME, 1) == before["history"]
        assert pg.memory.recent_changes(HOME, limit=50) == before["changes"]
        after = [pg.reminders.list(s, include_done=True) for s in (HOME, GROUP)]
        assert after == before["reminders"]
        assert pg.outbox.items(HOME) == before["outbox"]
        assert pg.tasks.list(HOME) == before["tasks"]
        assert [m.content for m in pg.memory.search(HOME, "花莲", now=NOW)] == [
            "John lives in 花莲"
        ]
        assert [m.content for m in pg.memory.search(GROUP, "семья", now=NOW)] == [
            "Мама живёт в Москве"
        ]
        new, _ = pg.memory.remember(HOME, "after the copy", author="j", via="cli", now=NOW)
        assert new.id == 5
        assert pg.search_index.queued_memories() == [(2, HOME), (3, GROUP), (5, HOME)]
    finally:
        pg.close()


def test_copying_into_a_database_that_holds_data_is_refused(
    sqlite_home: Path, postgres_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["migrate", "--to", postgres_url]) == 0
    capsys.readouterr()
    assert main(["migrate", "--to", postgres_url]) == 1
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1
    assert "already holds 4 rows in memories" in err


def _conversations(home: Path) -> None:
    """Live and archived sessions (a mark, a linked summary) and a history log."""
    from zoneinfo import ZoneInfo

    from lore.backends.local.history import History
    from lore.backends.local.sessions import LocalSessions

    sessions = LocalSessions(home / "sessions", home)
    chat = sessions.live(HOME)
    chat.append([{"role": "user", "content": "我住在花莲"}, {"role": "assistant", "content": "好"}])
    closed = sessions.close(chat, reason="idle", ended_at=NOW, zone=ZoneInfo("Asia/Taipei"),
                            slug="hualien")  # fmt: skip
    assert closed is not None
    sessions.archive.link_summary(closed.session_id, "workspace/memory/h.md", "hualien", "written")
    sessions.live(HOME).append([{"role": "user", "content": "Привет", "author": "john"}])
    sessions.live(HOME).mark(0, cancelled=True)
    sessions.live(GROUP).append([{"role": "user", "content": "群里", "author": "anna"}])
    history = History(home / "workspace" / "memory")
    history.append(HOME, "John moved to 花莲", now=NOW)
    history.append(GROUP, "Анна звонила маме", now=NOW + timedelta(minutes=5))
    history.set_dream_cursor(1)


def _read_home(home: Path) -> dict[str, object]:
    from lore.backends.local.history import History
    from lore.backends.local.sessions import LocalSessions

    sessions = LocalSessions(home / "sessions", home)
    history = History(home / "workspace" / "memory")
    archive = [(e, sessions.archive.read_messages(e)) for e in sessions.archive.entries()]
    return {
        "live": {
            key: (vars(sessions.live(key).meta), sessions.live(key).messages)
            for key in sessions.live_keys()
        },  # fmt: skip
        "archive": archive,
        "history": (history.entries(), history.dream_cursor()),
    }


def test_a_home_goes_to_postgres_and_back_whole_sessions_and_history_included(
    sqlite_home: Path, postgres_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _conversations(sqlite_home)
    before = _read_home(sqlite_home)
    assert main(["migrate", "--to", postgres_url]) == 0
    assert "live sessions        2 rows" in capsys.readouterr().out

    pg = PostgresBackend(postgres_url)
    try:
        live = pg.sessions.live(HOME)
        assert live.messages == [{"role": "user", "content": "Привет", "author": "john",
                                  "cancelled": True}]  # fmt: skip
        (entry,) = pg.sessions.archive.entries()
        assert (entry.summary, entry.memory_path) == ("written", "workspace/memory/h.md")
        assert [e.content for e in pg.history.entries()] == ["John moved to 花莲",
                                                             "Анна звонила маме"]  # fmt: skip
    finally:
        pg.close()

    back = tmp_path / "home-again"
    assert main(["migrate", "--home", str(back), "--from", postgres_url]) == 0
    out = capsys.readouterr().out
    assert out.count(" same") == 9
    assert "history              2 rows" in out
    assert _read_home(back) == before
    db = Database(back / "lore.db")
    memories = SQLiteMemoryStore(db)
    assert [m.content for m in memories.search(HOME, "花莲", now=NOW)] == ["John lives in 花莲"]
    assert [m.content for m in memories.search(GROUP, "семья", now=NOW)] == ["Мама живёт в Москве"]
    assert SQLiteReminderStore(db).list(GROUP)[0].text == "позвонить маме"
    (task,) = SQLiteTaskStore(db).list(HOME)
    assert (task.prompt, task.max_rounds, task.last_error) == ("看看天气", 2, "ошибка модели")
    db.close()


def test_copying_back_into_a_home_that_holds_data_is_refused(
    sqlite_home: Path, postgres_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["migrate", "--to", postgres_url]) == 0
    capsys.readouterr()
    assert main(["migrate", "--from", postgres_url]) == 1
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1
    assert "already holds 4 rows in memories" in err


def test_a_copy_that_fails_in_the_sessions_leaves_the_database_empty(
    sqlite_home: Path, postgres_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    _conversations(sqlite_home)
    (sqlite_home / "sessions" / "archive").rename(sqlite_home / "moved")  # transcripts gone
    assert main(["migrate", "--to", postgres_url]) == 1
    assert "missing" in capsys.readouterr().err
    pg = PostgresBackend(postgres_url)
    try:
        assert pg.memory.export(HOME) == [] and pg.sessions.live_keys() == []
    finally:
        pg.close()


def test_copying_back_into_a_home_with_sessions_is_refused_before_anything_is_written(
    sqlite_home: Path, postgres_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["migrate", "--to", postgres_url]) == 0
    back = tmp_path / "busy-home"
    _conversations(back)
    capsys.readouterr()
    assert main(["migrate", "--home", str(back), "--from", postgres_url]) == 1
    assert "already holds sessions" in capsys.readouterr().err
    assert not (back / "lore.db").exists()
