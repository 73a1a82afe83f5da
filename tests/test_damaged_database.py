"""A lost or damaged `lore.db` is never replaced silently and never gives a traceback;
`lore doctor` checks it and recovers every readable row into a new file, keeping the old.
(The commands run in this process, as tests/lore_command.py describes.)"""

from __future__ import annotations

import sqlite3
import subprocess
from datetime import UTC, datetime
from pathlib import Path

import pytest

from lore.backends.local.database import Database
from lore.backends.local.memories import SQLiteMemoryStore as MemoryStore
from lore.config import Config
from lore.errors import StoreError
from tests.lore_command import lore_text

NOW = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)


def _lore(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(LORE_HOME=str(home), LORE_USER="anna", LORE_MODEL="openai/gpt-4o-mini")
    env["OPENAI_API_KEY"] = "sk-test"
    env["OPENAI_BASE_URL"] = "http://127.0.0.1:9/v1"  # never reached: the database fails first
    return lore_text(*args, env=env)


def _one_line(done: subprocess.CompletedProcess[str], *words: str) -> None:
    assert done.returncode == 1, done.stdout
    assert "Traceback" not in done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("lore: "), done.stderr
    assert all(word in lines[0] for word in words), lines[0]


def _fill(config: Config, count: int = 400) -> None:
    db = Database(config.db_path)
    store = MemoryStore(db)
    for n in range(count):
        store.remember(
            "cli:default",
            f"Факт номер {n}: 我记得第{n}件事 " + "x" * 120,
            author="anna",
            via="cli",
            now=NOW,
        )
    db.checkpoint()
    db.close()


def _corrupt_memories_page(path: Path) -> None:
    """Overwrite a leaf page in the middle of the memories table, and every leaf of the
    indexes that keep memories unique and order the block (read by add and chat)."""
    conn = sqlite3.connect(str(path))
    size = conn.execute("PRAGMA page_size").fetchone()[0]
    victims = []
    for name in ("memories", "memories_dedupe", "memories_block"):
        pages = [
            row[0]
            for row in conn.execute(
                "SELECT pageno FROM dbstat WHERE name = ? AND pagetype = 'leaf' ORDER BY pageno",
                (name,),
            )
        ]
        assert len(pages) > 2, name
        victims.extend([pages[len(pages) // 2]] if name == "memories" else pages)
    conn.close()
    with path.open("r+b") as f:
        for victim in victims:
            f.seek((victim - 1) * size)
            f.write(b"\xde\xad\xbe\xef" * (size // 4))


@pytest.mark.parametrize("content", [b"", b"these are my notes, not a database\n"])
def test_an_empty_or_foreign_database_file_is_refused_not_replaced(
    home: Path, content: bytes
) -> None:
    home.mkdir(parents=True)
    (home / "lore.db").write_bytes(content)
    for args in (("memory", "list"), ("memory", "add", "Anna likes tea"), ("chat", "-m", "hi")):
        _one_line(_lore(home, *args), "lore.db", "lore restore")
    assert (home / "lore.db").read_bytes() == content


def test_opening_an_empty_database_file_raises_and_leaves_it_alone(tmp_path: Path) -> None:
    path = tmp_path / "lore.db"
    path.write_bytes(b"")
    with pytest.raises(StoreError, match="empty"):
        Database(path)
    assert path.read_bytes() == b""


def test_a_new_database_is_created_whole(tmp_path: Path) -> None:
    path = tmp_path / "new" / "lore.db"
    Database(path).close()
    assert path.read_bytes()[:16] == b"SQLite format 3\x00"
    assert sorted(p.name for p in path.parent.iterdir() if p.name.startswith(".")) == []


def test_a_corrupt_page_gives_one_line_in_list_add_and_chat(config: Config) -> None:
    _fill(config)
    _corrupt_memories_page(config.db_path)
    for args in (("memory", "list"), ("memory", "add", "Anna likes tea"), ("chat", "-m", "hi")):
        _one_line(_lore(config.home, *args), "damaged", "lore doctor")


def test_doctor_reports_then_recovers_every_readable_row_keeping_the_old_file(
    config: Config,
) -> None:
    _fill(config)
    _corrupt_memories_page(config.db_path)
    damaged_bytes = config.db_path.read_bytes()
    check = _lore(config.home, "doctor")
    assert check.returncode == 1 and "lore.db: damaged" in check.stdout, check.stdout
    assert config.db_path.read_bytes() == damaged_bytes  # checking changes nothing

    repair = _lore(config.home, "doctor", "--repair")
    assert repair.returncode == 0, repair.stdout + repair.stderr
    kept = [p for p in config.home.iterdir() if p.name.startswith("lore.db.damaged-")]
    assert len(kept) == 1 and kept[0].read_bytes()[:4096] == damaged_bytes[:4096]

    assert _lore(config.home, "doctor").returncode == 0
    listed = _lore(config.home, "memory", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    recovered = listed.stdout.count('"content"')
    # One page of ~400 rows is lost; everything else is back and readable.
    assert 300 <= recovered < 400, recovered
    assert "第0件事" in listed.stdout and "第399件事" in listed.stdout
    added = _lore(config.home, "memory", "add", "Anna likes tea")
    assert added.returncode == 0, added.stderr
    found = _lore(config.home, "index", "rebuild", "--no-vectors")
    assert found.returncode == 0, found.stderr


def test_repair_leaves_the_memory_counts_to_the_triggers_and_does_not_list_them(
    config: Config,
) -> None:
    _fill(config)
    _corrupt_memories_page(config.db_path)
    repair = _lore(config.home, "doctor", "--repair")
    assert repair.returncode == 0, repair.stdout + repair.stderr
    assert "memories: " in repair.stdout and "memory_counts" not in repair.stdout
    db = Database(config.db_path)
    active = MemoryStore(db).active("cli:default", now=NOW)
    [(counted,)] = db.conn.execute("SELECT active FROM memory_counts").fetchall()
    db.close()
    assert counted == len(active)


def test_doctor_says_how_to_restore_an_empty_database(home: Path) -> None:
    home.mkdir(parents=True)
    (home / "lore.db").write_bytes(b"")
    done = _lore(home, "doctor")
    assert done.returncode == 1 and "lore restore" in done.stdout
    assert (home / "lore.db").read_bytes() == b""
