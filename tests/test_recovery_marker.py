"""Chat start-up recovery costs the same with ten archived sessions or ten thousand: once a
pass found everything in order, the next start opens no transcript until something
changes, and a crash after that is still found and finished."""

from __future__ import annotations

from pathlib import Path

import pytest

from lore.backends.local.archive import SessionArchive
from lore.llm.base import Message
from lore.ports.sessions import ArchivedSession, FaultHook
from lore.runtime import Runtime
from lore.sessions.closing import close_session, recover_interrupted

KEY = "cli:default"
TURN: list[Message] = [
    {"role": "user", "content": "我住在花莲", "author": "john"},
    {"role": "assistant", "content": "好的"},
]


class Crash(Exception):
    pass


def _close(lore: Runtime, key: str = KEY, fault: FaultHook | None = None) -> None:
    lore.session(key).append(TURN)
    close_session(lore, key, fault=fault)


def _no_opening(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    opened: list[Path] = []
    real = SessionArchive.read_metadata

    def counting(self: SessionArchive, path: Path) -> object:
        opened.append(path)
        return real(self, path)

    monkeypatch.setattr(SessionArchive, "read_metadata", counting)
    return opened


def test_a_second_start_with_nothing_changed_opens_no_transcript(
    lore: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    for key in ("cli:a", "cli:b", "cli:c"):
        _close(lore, key)
    opened = _no_opening(monkeypatch)
    recover_interrupted(lore)
    assert opened == []  # indexed transcripts are never opened, even on a full pass
    listed: list[int] = []
    real = SessionArchive.entries

    def entries(self: SessionArchive) -> list[ArchivedSession]:
        listed.append(1)
        return real(self)

    monkeypatch.setattr(SessionArchive, "entries", entries)
    recover_interrupted(lore)
    assert listed == []  # nothing changed: not even the index is read


def test_a_crash_after_the_marker_is_still_recovered(lore: Runtime) -> None:
    _close(lore, "cli:a")
    recover_interrupted(lore)  # marker written
    assert (lore.config.sessions_dir / ".recovered.json").exists()

    def fault(step: str) -> None:
        if step == "index_written":
            raise Crash(step)

    with pytest.raises(Crash):
        _close(lore, KEY, fault=fault)
    assert lore.session(KEY).messages == TURN  # indexed, but the live session not cleared
    recovered = recover_interrupted(lore, min_age=0)
    assert lore.session(KEY).messages == []  # the close was finished
    assert KEY in {entry.key for entry in recovered}


def test_pending_summaries_are_still_reported_from_the_marker(lore: Runtime) -> None:
    _close(lore, "cli:a")
    first = recover_interrupted(lore)
    second = recover_interrupted(lore)
    assert [e.session_id for e in first] == [e.session_id for e in second] != []
