"""A live session held in memory. Handles on one key share its state, as handles on the
local file do: `refresh()` sees what another handle appended or reset."""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

from lore.llm.base import Message
from lore.messages import merge_flags, parse_message
from lore.ports.sessions import SessionMeta

__all__ = ["FakeDraft", "FakeLiveSession", "LiveState", "json_copy"]


@dataclass
class LiveState:
    """What the file of one key would hold: metadata, then messages and marks."""

    meta: SessionMeta
    lines: list[dict[str, Any]] = field(default_factory=list)
    lock: threading.RLock = field(default_factory=threading.RLock)

    @classmethod
    def fresh(cls, key: str, session_id: str | None = None) -> LiveState:
        now = _now()
        return cls(SessionMeta(session_id or uuid.uuid4().hex, key, now, now))

    def start_over(self, session_id: str | None = None) -> None:
        self.meta = LiveState.fresh(self.meta.key, session_id).meta
        self.lines = []


class FakeDraft:
    def __init__(self) -> None:
        self._parts: list[str] = []

    def write(self, text: str) -> None:
        self._parts.append(text)

    @property
    def text(self) -> str:
        return "".join(self._parts)


class FakeLiveSession:
    def __init__(self, state: LiveState) -> None:
        self._state = state
        self.key = state.meta.key
        self.messages: list[Message] = []
        self.meta = state.meta
        self.refresh()

    def refresh(self) -> None:
        with self._state.lock:
            self.meta = replace(self._state.meta, extra=dict(self._state.meta.extra))
            messages: list[Message] = []
            for line in self._state.lines:
                if line.get("_type") == "mark":
                    index = line["index"]
                    if 0 <= index < len(messages):
                        merge_flags(messages[index], line["flags"])
                else:
                    messages.append(parse_message(json_copy(line)))
            self.messages = messages

    def append(self, messages: list[Message], *, touch: bool = True, durable: bool = True) -> None:
        if not messages:
            return
        copies = [json_copy(m) for m in messages]  # what a file would keep: JSON, nothing shared
        with self._state.lock:
            self._state.lines.extend(copies)
            if touch:
                self._state.meta.updated_at = _now()
            self.refresh()

    def append_once(self, key: str, messages: list[Message]) -> bool:
        with self._state.lock:
            self.refresh()
            if any(m.get("delivery") == key for m in self.messages):
                return False
            self.append([{**m, "delivery": key} for m in messages])
            return True

    def mark(self, index: int, **flags: Any) -> None:
        with self._state.lock:
            self._state.lines.append({"_type": "mark", "index": index, "flags": json_copy(flags)})
            self.refresh()

    @contextmanager
    def draft(
        self, index: int, why: Callable[[], dict[str, Any]] | None = None
    ) -> Iterator[FakeDraft]:
        yield FakeDraft()  # nothing outlives this process, so nothing to recover

    def update_meta(self, **changes: Any) -> None:
        with self._state.lock:
            meta = self._state.meta
            for name, value in changes.items():
                if name == "extra":
                    meta.extra.update(json_copy(value))
                else:
                    setattr(meta, name, value)
            self.refresh()

    def reset(self, session_id: str | None = None) -> None:
        with self._state.lock:
            self._state.start_over(session_id)
            self.refresh()

    def locked(self) -> AbstractContextManager[None]:
        return _held(self._state.lock)


@contextmanager
def _held(lock: threading.RLock) -> Iterator[None]:
    with lock:
        yield


def json_copy(data: Mapping[str, object]) -> dict[str, Any]:
    """`data` as a store keeps it: JSON, nothing shared with the caller."""
    copied: dict[str, Any] = json.loads(json.dumps(data, ensure_ascii=False))
    return copied


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")
