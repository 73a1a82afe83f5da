"""A damaged line in an archived transcript is skipped with a warning naming the file and
line, wherever a transcript is read; a broken metadata line has a repair path."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from lore.backends.local.archive import SessionArchive
from lore.backends.local.live import LiveSession
from lore.cli import main
from lore.config import Config
from lore.runtime import Runtime
from lore.sessions.closing import close_session

BAD_LINES = (
    b"{not json\n",
    b"\xff\xfe broken utf-8\n",
    b"[1, 2, 3]\n",
    b'{"role": 5, "content": "x"}\n',
    b'"just a string"\n',
)


def _archived(lore: Runtime) -> Path:
    session = lore.session("cli:default")
    session.append(
        [
            {"role": "user", "content": "我们去花莲看鲸鱼", "author": "john"},
            {"role": "assistant", "content": "Хорошая идея: киты в Хуаляне."},
        ]
    )
    entry = close_session(lore, "cli:default")
    assert entry is not None
    archive = lore.sessions.archive
    assert isinstance(archive, SessionArchive)  # the local backend: transcripts are files
    return archive.resolve(entry.transcript_path)


def _damage(path: Path) -> None:
    with path.open("ab") as f:
        f.writelines(BAD_LINES)
        f.write(b'{"role": "user", "content": "after the damage: Hualien whales"}\n')


async def test_reading_an_archive_skips_each_bad_line_and_names_it(
    lore: Runtime, caplog: pytest.LogCaptureFixture
) -> None:
    path = _archived(lore)
    _damage(path)
    archive = lore.sessions.archive
    (entry,) = archive.entries()
    with caplog.at_level(logging.WARNING):
        messages, total = archive.read_messages(entry)
    assert [m["content"] for m in messages] == [
        "我们去花莲看鲸鱼",
        "Хорошая идея: киты в Хуаляне.",
        "after the damage: Hualien whales",
    ]
    assert total == 3
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == len(BAD_LINES)
    assert all(path.name in w for w in warnings)
    assert f"{path.name} line 4:" in warnings[0]


async def test_memory_search_and_index_rebuild_survive_a_bad_line(
    lore: Runtime, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _archived(lore)
    _damage(path)
    await lore.aclose()
    assert main(["index", "rebuild"]) == 0
    code = main(["memory", "search", "Hualien whales", "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "after the damage: Hualien whales" in out
    assert "Traceback" not in err


async def test_doctor_repairs_a_broken_metadata_line_from_the_index(
    lore: Runtime, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _archived(lore)
    lines = path.read_bytes().split(b"\n", 1)
    path.write_bytes(b'{"_type": "metadata", "session_id": \n' + lines[1])
    await lore.aclose()
    assert main(["doctor"]) == 1
    out, _ = capsys.readouterr()
    assert path.name in out and "metadata" in out
    assert main(["doctor", "--repair"]) == 0
    capsys.readouterr()
    archive = SessionArchive(lore.config.sessions_dir, lore.config.home)
    header = archive.read_metadata(path)
    assert header is not None and header["key"] == "cli:default"
    (entry,) = archive.entries()
    messages, _ = archive.read_messages(entry)
    assert messages[0]["content"] == "我们去花莲看鲸鱼"
    kept = list(path.parent.parent.glob("damaged/*"))
    assert kept and b'"session_id": \n' in kept[0].read_bytes()
    assert main(["doctor"]) == 0
    assert "transcripts: ok" in capsys.readouterr().out


def test_doctor_repairs_a_live_session_whose_metadata_line_broke(
    config: Config, capsys: pytest.CaptureFixture[str]
) -> None:
    session = LiveSession(config.sessions_dir, "telegram:42")
    session.append([{"role": "user", "content": "Напомни про врача"}])
    raw = session.path.read_bytes()
    session.path.write_bytes(b"garbage\n" + raw.split(b"\n", 1)[1])
    assert main(["chat", "--session", "telegram:42", "-m", "/status"]) == 1
    err = capsys.readouterr().err
    assert err.splitlines()[-1].startswith("lore: ") and "lore doctor --repair" in err
    assert main(["doctor", "--repair"]) == 0
    capsys.readouterr()
    repaired = LiveSession(config.sessions_dir, "telegram:42")
    assert repaired.meta.key == "telegram:42"
    assert [m["content"] for m in repaired.messages] == ["Напомни про врача"]
