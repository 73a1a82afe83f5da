"""The seam forget-everywhere passes through: every store that keeps people's words as
text implements `Redactable`, and forget-everywhere finds each store of the backend by
that type, so a store added later cannot be missed silently (a test lists the stores
that hold text some other way, and fails on any other that is not `Redactable`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, runtime_checkable

__all__ = ["Redactable"]


@runtime_checkable
class Redactable(Protocol):
    # What one changed record is called in forget-everywhere's report: "reminder".
    redacted_noun: str

    def redact_text(
        self, match: Callable[[str], bool], redact: Callable[[str], str], *, dry_run: bool = False
    ) -> int:
        """Pass every text that `match`es through `redact`; how many records (would)
        change."""
        ...
