"""A conversation's live handle is shared by threads (the after-turn indexing refreshes
it from a worker while the turn appends on the event loop): every line is there once."""

from __future__ import annotations

import threading
from pathlib import Path

from lore.backends.local.live import LiveSession


def test_refreshes_from_other_threads_while_lines_are_appended_add_each_line_once(
    tmp_path: Path,
) -> None:
    live = LiveSession(tmp_path / "sessions", "line:group:family")
    done = threading.Event()

    def keep_refreshing() -> None:
        while not done.is_set():
            live.refresh()

    readers = [threading.Thread(target=keep_refreshing) for _ in range(3)]
    for reader in readers:
        reader.start()
    try:
        for n in range(150):
            text = f"сообщение {n} 消息"
            live.append([{"role": "user", "content": text}], durable=False)
    finally:
        done.set()
        for reader in readers:
            reader.join(10)
    said = [m["content"] for m in live.messages]
    assert said == [f"сообщение {n} 消息" for n in range(150)]
    again = LiveSession(tmp_path / "sessions", "line:group:family")
    assert [m["content"] for m in again.messages] == said
