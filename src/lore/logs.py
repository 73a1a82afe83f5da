"""Where log lines go: `$LORE_HOME/lore.log` always; the terminal only what needs a person.

`lore.log` is rotated by size (`[log] max_kb`), keeping `[log] backups` old files, so a
service that runs for months never fills the disk with its log.

A chat shows only errors (a warning from background work must not break the prompt);
`lore serve` shows its activity on stderr, as a service should.
"""

from __future__ import annotations

import logging
import logging.handlers
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from lore.config import LogConfig

__all__ = ["configure_logging", "resize_log"]

_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


_installed: list[logging.Handler] = []


class _ConsoleFormat(logging.Formatter):
    """A warning or an error as the CLI prints its errors ("lore: …"); activity (what `lore
    serve` shows at INFO) with the time instead, so that it never reads as an error."""

    def __init__(self) -> None:
        super().__init__("%(asctime)s %(message)s", datefmt="%H:%M:%S")

    def format(self, record: logging.LogRecord) -> str:
        if record.levelno >= logging.WARNING:
            return f"lore: {record.getMessage()}" + (
                "\n" + self.formatException(record.exc_info) if record.exc_info else ""
            )
        return super().format(record)


def configure_logging(
    home: Path, *, console_level: int = logging.ERROR, rotation: LogConfig | None = None
) -> None:
    """Install Lore's two handlers on the root logger, replacing any installed before.
    `rotation` caps `lore.log` (default: 1000 KB, three old files kept)."""
    max_bytes = (rotation.max_kb if rotation else 1000) * 1000
    backups = rotation.backups if rotation else 3
    root = logging.getLogger()
    for handler in _installed:
        root.removeHandler(handler)
        handler.close()
    _installed.clear()
    root.setLevel(logging.INFO)
    try:
        home.mkdir(parents=True, exist_ok=True)
        to_file = logging.handlers.RotatingFileHandler(
            home / "lore.log", maxBytes=max_bytes, backupCount=backups, encoding="utf-8"
        )
    except OSError:
        to_file = None
    if to_file is not None:
        to_file.setFormatter(logging.Formatter(_FORMAT))
        _installed.append(to_file)
    console = logging.StreamHandler()
    console.setLevel(console_level)
    console.setFormatter(_ConsoleFormat())
    _installed.append(console)
    for handler in _installed:
        root.addHandler(handler)
    # Third-party chatter stays in the file.
    for noisy in ("httpx", "httpcore", "jieba"):
        logging.getLogger(noisy).setLevel(logging.WARNING)


def resize_log(rotation: LogConfig) -> None:
    """Apply new rotation settings to the installed `lore.log` from its next line on."""
    for handler in _installed:
        if isinstance(handler, logging.handlers.RotatingFileHandler):
            handler.maxBytes = rotation.max_kb * 1000
            handler.backupCount = rotation.backups
