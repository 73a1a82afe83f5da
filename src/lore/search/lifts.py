"""Score changes that look past one entry: the session it belongs to, the source it is.

- The session lift: a session (a note file) whose entries match the query as a whole
  lifts each of them, by its share of the best session's summed score. A story told over
  many turns ("what did we decide about the trip, and why?") is found in the session
  that talks about it, even through the turns that match it least. A memory is a story
  of its own, already whole: it gets the full lift, as the best session's turns do.
- The summary discount: a closed session's summary (memory/YYYY-MM-DD-HHMM-slug.md)
  retells what its transcript holds word for word; it is searched as its own source at a
  lower weight, so the exact turns rank first and the summary still answers where no
  turn does (a session whose transcript is gone, one summarised long ago).

Both are pure functions of the candidates, so they cost microseconds.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, MutableMapping

from lore.ports.search import Stored

__all__ = ["group_of", "is_summary", "lift_sessions", "weigh_summaries"]

# A closed session's summary or raw digest (lore.memory.session_summary names them).
_SUMMARY = re.compile(r"^memory/\d{4}-\d{2}-\d{2}-\d{4}-[^/]+\.md$")


def group_of(entry: Stored) -> tuple[str, str]:
    """What an entry's session is: a session, a note file; each memory on its own."""
    return (entry.kind, entry.source if entry.kind != "memory" else str(entry.locator))


def is_summary(entry: Stored) -> bool:
    """A chunk of a closed session's summary (not a daily note, not MEMORY.md)."""
    return entry.kind == "note" and _SUMMARY.match(entry.source) is not None


def lift_sessions(
    scores: MutableMapping[int, float], entries: Mapping[int, Stored], weight: float
) -> None:
    """Each score × (1 + weight × its session's summed score / the best session's); a
    memory's × (1 + weight)."""
    if not weight or not scores:
        return
    mass: dict[tuple[str, str], float] = {}
    for entry_id, score in scores.items():
        group = group_of(entries[entry_id])
        mass[group] = mass.get(group, 0.0) + score
    best = max(mass.values()) or 1.0
    for entry_id in scores:
        entry = entries[entry_id]
        share = 1.0 if entry.kind == "memory" else mass[group_of(entry)] / best
        scores[entry_id] *= 1.0 + weight * share


def weigh_summaries(
    scores: MutableMapping[int, float], entries: Mapping[int, Stored], weight: float
) -> None:
    """Session summaries' scores × `weight`."""
    if weight == 1.0:
        return
    for entry_id in scores:
        if is_summary(entries[entry_id]):
            scores[entry_id] *= weight
