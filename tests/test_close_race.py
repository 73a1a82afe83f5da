"""/new while another process appends: every message ends up archived or live, once.

The closer holds the session's lock from reading the messages to the reset, so an append
that arrives meanwhile waits and lands in the fresh session. The closer here is slowed
down just before each reset to hold the window open wide.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from collections import Counter
from pathlib import Path

import pytest

from lore.backends.local.archive import SessionArchive
from lore.backends.local.live import LiveSession
from lore.config import Config
from lore.llm.scripted import ScriptedProvider
from lore.runtime import Runtime, build
from lore.sessions.closing import close_session

KEY = "cli:default"
COUNT = 80

_APPENDER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from lore.backends.local.live import LiveSession

    directory, count = Path(sys.argv[1]), int(sys.argv[2])
    session = LiveSession(directory, "cli:default")
    for n in range(count):
        session.append([{"role": "user", "content": f"сообщение {n} 消息"}])
        time.sleep(0.003)
    """
)


def _everything(lore: Runtime) -> Counter[str]:
    seen: Counter[str] = Counter()
    archive = lore.sessions.archive
    assert isinstance(archive, SessionArchive)  # the local backend: transcripts are files
    for path in archive.transcripts():
        for raw in path.read_bytes().splitlines()[1:]:
            seen[json.loads(raw)["content"]] += 1
    for message in LiveSession(lore.config.sessions_dir, KEY).messages:
        seen[str(message["content"])] += 1
    return seen


def test_new_while_another_process_appends_loses_and_repeats_nothing(
    config: Config, monkeypatch: pytest.MonkeyPatch
) -> None:
    lore = build(config, provider=ScriptedProvider())
    reset = LiveSession.reset

    def slow_reset(self: LiveSession, session_id: str | None = None) -> None:
        time.sleep(0.02)  # a closer descheduled between its check and the reset
        reset(self, session_id)

    monkeypatch.setattr(LiveSession, "reset", slow_reset)
    src = str(Path(__file__).resolve().parents[1] / "src")
    appender = subprocess.Popen(
        [sys.executable, "-c", _APPENDER, str(lore.config.sessions_dir), str(COUNT)],
        env={**os.environ, "PYTHONPATH": src},
    )
    closes = 0
    try:
        while appender.poll() is None:
            if close_session(lore, KEY) is not None:
                closes += 1
            time.sleep(0.01)
    finally:
        assert appender.wait(timeout=60) == 0
    close_session(lore, KEY)
    seen = _everything(lore)
    assert closes > 3
    assert seen == Counter({f"сообщение {n} 消息": 1 for n in range(COUNT)})
