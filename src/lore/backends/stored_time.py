"""How the stores keep time: aware moments only (a naive one is a ValueError naming
what it was for), to the whole second where a port says so (a due time up, any other
moment down)."""

from __future__ import annotations

import math
from datetime import UTC, datetime

__all__ = ["aware", "whole_second"]


def aware(moment: datetime, what: str) -> datetime:
    """`moment`, when it is aware; `what` names the times in the error ("outbox")."""
    if moment.tzinfo is None:
        raise ValueError(f"{what} times must be aware")
    return moment


def whole_second(moment: datetime, what: str, *, up: bool = False) -> datetime:
    """The aware `moment` to its whole second, in UTC: rounded up with `up`, else down."""
    stamp = aware(moment, what).timestamp()
    return datetime.fromtimestamp(math.ceil(stamp) if up else math.floor(stamp), UTC)
