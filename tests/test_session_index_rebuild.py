"""An emptied or cut `sessions/_sessions.jsonl` hides archived sessions: `lore doctor`
names the transcripts it lost, `--repair` rebuilds their lines from each transcript's
metadata line, and one whose metadata line is unreadable is reported, never invented."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from lore.backends.local.archive import SessionArchive
from lore.cli import main
from lore.config import Config
from lore.core.tools import ToolContext
from lore.llm.base import ToolCall
from lore.llm.scripted import ScriptedProvider
from lore.ports.sessions import ArchivedSession
from lore.runtime import Runtime, build
from lore.sessions.closing import close_session

KEY = "cli:default"


def _archive(lore: Runtime, words: list[str]) -> ArchivedSession:
    lore.session(KEY).append([{"role": "user", "content": word} for word in words])
    entry = close_session(lore, KEY)
    assert entry is not None
    return entry


def _local(lore: Runtime) -> SessionArchive:
    archive = lore.sessions.archive
    assert isinstance(archive, SessionArchive)  # the local backend: the index is a file
    return archive


async def _session_list(config: Config) -> str:
    lore = build(config, provider=ScriptedProvider())
    try:
        ctx = ToolContext(
            scope=KEY,
            author="john",
            session_id="live",
            message_index=0,
            now=datetime(2026, 11, 30, 9, 0, tzinfo=UTC),
            timezone="Asia/Taipei",
        )
        result = await lore.tools.call(ToolCall("c1", "session_list", "{}"), ctx)
        assert not result.is_error, result.content
        return result.content
    finally:
        await lore.aclose()


async def test_doctor_rebuilds_an_emptied_session_index_from_the_transcripts(
    lore: Runtime, config: Config, capsys: pytest.CaptureFixture[str]
) -> None:
    first = _archive(lore, ["花莲看鲸鱼", "Хуалянь"])
    second = _archive(lore, ["Taipei 101 at night"])
    archive = _local(lore)
    before = [entry.to_dict() for entry in archive.entries()]
    listed_before = await _session_list(config)
    await lore.aclose()
    archive.index_path.write_bytes(b"")

    assert main(["sessions", "list"]) == 0
    out, err = capsys.readouterr()
    assert "No closed sessions yet." in out
    (hint,) = err.splitlines()
    assert "2 archived transcripts" in hint and "lore doctor" in hint
    assert first.session_id not in await _session_list(config)

    assert main(["doctor"]) == 1
    out = capsys.readouterr().out
    (line,) = [line for line in out.splitlines() if "missing from the index" in line]
    assert "2 archived transcripts" in line and "`lore doctor --repair` rebuilds" in line
    assert archive.index_path.read_bytes() == b""  # checking changes nothing

    assert main(["doctor", "--repair"]) == 0
    assert "rebuilt 2 index lines" in capsys.readouterr().out
    assert [entry.to_dict() for entry in archive.entries()] == before
    assert await _session_list(config) == listed_before

    assert main(["sessions", "list"]) == 0
    out, err = capsys.readouterr()
    assert first.session_id in out and second.session_id in out and err == ""
    assert main(["doctor"]) == 0
    assert "transcripts: ok" in capsys.readouterr().out


async def test_a_cut_index_keeps_its_good_lines_and_gets_only_the_lost_ones_back(
    lore: Runtime, capsys: pytest.CaptureFixture[str]
) -> None:
    first = _archive(lore, ["kept line"])
    _archive(lore, ["lost line"])
    archive = _local(lore)
    before = [entry.to_dict() for entry in archive.entries()]
    await lore.aclose()
    raw = archive.index_path.read_bytes()
    good = raw[: raw.index(b"\n") + 1]
    assert first.session_id.encode() in good
    archive.index_path.write_bytes(good + b'{"_type":"session","session_id":"')  # torn

    assert main(["doctor"]) == 1
    assert "1 archived transcript missing" in capsys.readouterr().out
    assert main(["doctor", "--repair"]) == 0
    assert "rebuilt 1 index line " in capsys.readouterr().out
    assert archive.index_path.read_bytes().startswith(good)
    assert [entry.to_dict() for entry in archive.entries()] == before
    assert main(["doctor", "--repair"]) == 0  # again: nothing more to add
    assert len(archive.index_path.read_bytes().splitlines()) == 2


async def test_an_unindexed_transcript_with_an_unreadable_metadata_line_is_not_invented(
    lore: Runtime, capsys: pytest.CaptureFixture[str]
) -> None:
    _archive(lore, ["no one can tell whose this was"])
    archive = _local(lore)
    (entry,) = archive.entries()
    await lore.aclose()
    path = archive.resolve(entry.transcript_path)
    body = path.read_bytes().split(b"\n", 1)[1]
    path.write_bytes(b'{"_type": "metadata", "session_id": \n' + body)
    archive.index_path.write_bytes(b"")

    assert main(["doctor"]) == 1
    out = capsys.readouterr().out
    assert f"{entry.transcript_path}: not in the index and its metadata line is unreadable" in out
    assert main(["doctor", "--repair"]) == 1
    out = capsys.readouterr().out
    assert "left as it is" in out and "rebuilt" not in out
    assert archive.index_path.read_bytes() == b""
    assert path.read_bytes().startswith(b'{"_type": "metadata", "session_id": \n')
    assert archive.entries() == []
