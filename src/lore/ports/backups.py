"""The backups Lore writes on its own (`[backup] every`): what forget-everywhere must
reach besides the stores and the home's files, since a backup is a compressed copy of
all of them."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Protocol

__all__ = ["Backups"]


class Backups(Protocol):
    def holding(self, count: Callable[[bytes], int]) -> list[tuple[str, int]]:
        """Each backup whose files hold the text (`count` counts it in a file's bytes),
        as shown (relative to the home when inside it), with how many times; a backup
        that cannot be read is listed with 0."""
        ...

    def replace_holding(self, names: Sequence[str], now: datetime) -> str | None:
        """A fresh backup of the home as it is now, then the backups `names` (as
        `holding` shows them) deleted; the fresh one as shown (None when `names` is
        empty)."""
        ...
