"""The files a service manager runs `lore serve` from: a systemd user unit and a launchd
LaunchAgent plist, written as text from one description of the service.

The unit restarts `lore serve` when it fails (not when it was stopped), stops it with
SIGTERM and gives it `STOP_SECONDS` to finish the replies in flight; SIGHUP (`systemctl
--user reload lore`) makes it read `config.toml` again. Secrets never go into the unit:
the variables chosen for the service go into an environment file of mode 0600 beside it.
"""

from __future__ import annotations

import plistlib
import sys
from dataclasses import dataclass, field
from pathlib import Path

__all__ = [
    "LAUNCHD_LABEL",
    "RESTART_SECONDS",
    "STOP_SECONDS",
    "UNIT_NAME",
    "Service",
    "environment_file",
    "launchd_plist",
    "lore_command",
    "systemd_unit",
]

UNIT_NAME = "lore.service"
LAUNCHD_LABEL = "lore.serve"
RESTART_SECONDS = 5  # between a failure and the next start
# A stop waits this long for the replies in flight, then the manager kills: above one
# model request's default timeout (120 s), so a reply being written is not cut.
STOP_SECONDS = 150


@dataclass(frozen=True)
class Service:
    """What runs: `command` (the `lore` that installed it, then `serve`), in `home`, with
    `env_file` (variables chosen for it, read by the manager) and `log_path` (launchd's
    stdout and stderr; systemd's go to the journal)."""

    command: tuple[str, ...]
    home: Path
    env_file: Path | None = None
    environment: dict[str, str] = field(default_factory=dict)  # launchd: no env files
    log_path: Path | None = None


def lore_command(executable: str | None = None) -> tuple[str, ...]:
    """The `lore` entry point beside this interpreter, else the interpreter running the
    package (`python -m lore`): absolute, so the manager's PATH does not matter."""
    python = Path(executable or sys.executable).absolute()
    script = python.parent / "lore"
    if script.is_file():
        return (str(script),)
    return (str(python), "-m", "lore")


def systemd_unit(service: Service) -> str:
    """The text of `~/.config/systemd/user/lore.service`."""
    start = " ".join(_systemd_word(word, command=True) for word in (*service.command, "serve"))
    lines = [
        "# Written by `lore service install`; `lore service uninstall` removes it.",
        "[Unit]",
        "Description=Lore, a personal AI assistant (lore serve)",
        "StartLimitIntervalSec=300",
        "StartLimitBurst=10",
        "",
        "[Service]",
        "Type=simple",
        f"ExecStart={start}",
        "ExecReload=/bin/kill -HUP $MAINPID",
        f"Environment={_systemd_word('LORE_HOME=' + str(service.home))}",
        "Environment=PYTHONUNBUFFERED=1",
    ]
    if service.env_file is not None:
        lines.append(f"EnvironmentFile={_systemd_path(service.env_file)}")
    lines += [
        f"WorkingDirectory={_systemd_path(service.home)}",
        "Restart=on-failure",
        f"RestartSec={RESTART_SECONDS}",
        "KillSignal=SIGTERM",
        # SIGTERM to `lore serve` alone: a command its exec tool runs may finish with it.
        "KillMode=mixed",
        f"TimeoutStopSec={STOP_SECONDS}",
        "",
        "[Install]",
        "WantedBy=default.target",
        "",
    ]
    return "\n".join(lines)


def environment_file(values: dict[str, str]) -> str:
    """`NAME="value"` lines as systemd's EnvironmentFile= reads them."""
    lines = ["# Variables `lore serve` gets as a service (lore service install --env NAME)."]
    for name, value in values.items():
        if "\n" in value or "\r" in value:
            raise ValueError(f"{name} holds a line break, which an environment file cannot")
        escaped = "".join("\\" + c if c in '\\"$`' else c for c in value)
        lines.append(f'{name}="{escaped}"')
    return "\n".join(lines) + "\n"


def launchd_plist(service: Service) -> bytes:
    """The LaunchAgent `~/Library/LaunchAgents/lore.serve.plist`."""
    log = str(service.log_path or service.home / "serve.log")
    spec = {
        "Label": LAUNCHD_LABEL,
        "ProgramArguments": [*service.command, "serve"],
        "EnvironmentVariables": {"LORE_HOME": str(service.home), **service.environment},
        "WorkingDirectory": str(service.home),
        "RunAtLoad": True,
        # Started again when it fails; a clean exit (a stop) stays stopped.
        "KeepAlive": {"SuccessfulExit": False},
        "ThrottleInterval": RESTART_SECONDS,
        "ExitTimeOut": STOP_SECONDS,
        "StandardOutPath": log,
        "StandardErrorPath": log,
        "ProcessType": "Background",
    }
    return plistlib.dumps(spec)


def _systemd_path(path: Path) -> str:
    """A path setting is the rest of its line, spaces and all; only specifiers count."""
    return str(path).replace("%", "%%")


def _systemd_word(word: str, *, command: bool = False) -> str:
    """One value as systemd reads it: `%` starts a specifier (and `$` a variable in a
    command line), so they are doubled; one with spaces or quotes is double-quoted."""
    word = word.replace("%", "%%")
    if command:
        word = word.replace("$", "$$")
    if word and not any(c in word for c in " \t\"'\\;"):
        return word
    return '"' + word.replace("\\", "\\\\").replace('"', '\\"') + '"'
