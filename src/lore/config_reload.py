"""What a running `lore serve` takes from a changed `config.toml` on SIGHUP.

Only settings read where they are used change while it runs; the rest were built into
something at start (the model's client, the database, the listening socket, the channels,
the gateway's limits) and wait for a restart. The split is made here, once, as pure data.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, is_dataclass, replace
from typing import Any

from lore.config import Config

__all__ = ["LIVE", "Reload", "reload_settings"]

# Each is read afresh at its every use: a turn (rounds, reply size, message size), a Dream
# run (its budget), a task being set (its budget), the scheduler's next wait, the log's
# next line.
LIVE = (
    "max_tool_rounds",
    "max_output_tokens",
    "max_message_chars",
    "dream.max_rounds",
    "dream.max_tokens",
    "dream.max_entries",
    "reminders.poll_seconds",
    "tasks.max_rounds",
    "tasks.max_seconds",
    "log.max_kb",
    "log.backups",
)


@dataclass(frozen=True)
class Reload:
    config: Config  # the running settings with the live changes applied
    applied: tuple[str, ...]  # changed, and in effect now
    need_restart: tuple[str, ...]  # changed in the file, not in effect until a restart

    def line(self) -> str:
        """One line for the log saying what changed and what did not take effect."""
        if not self.applied and not self.need_restart:
            return "config.toml reloaded: nothing changed"
        parts = []
        if self.applied:
            parts.append("applied " + ", ".join(self.applied))
        if self.need_restart:
            parts.append("needs a restart: " + ", ".join(self.need_restart))
        return "config.toml reloaded: " + "; ".join(parts)


def reload_settings(running: Config, fresh: Config) -> Reload:
    """The settings to run with after `fresh` was read: `running` with its live settings
    taken from `fresh`; every other difference is named as needing a restart."""
    changed = sorted(_differences(running, fresh, ""))
    applied = tuple(key for key in changed if key in LIVE)
    config = running
    for key in applied:
        config = _with(config, key, _get(fresh, key))
    return Reload(config, applied, tuple(key for key in changed if key not in LIVE))


def _differences(old: Any, new: Any, prefix: str) -> set[str]:
    found: set[str] = set()
    for f in fields(old):
        before, after = getattr(old, f.name), getattr(new, f.name)
        if is_dataclass(before) and is_dataclass(after):
            found |= _differences(before, after, f"{prefix}{f.name}.")
        elif before != after:
            found.add(prefix + f.name)
    return found


def _get(config: Config, dotted: str) -> Any:
    value: Any = config
    for part in dotted.split("."):
        value = getattr(value, part)
    return value


def _with(config: Any, dotted: str, value: Any) -> Any:
    head, _, rest = dotted.partition(".")
    if not rest:
        return replace(config, **{head: value})
    return replace(config, **{head: _with(getattr(config, head), rest, value)})
