"""`lore service install|uninstall|status|logs`: `lore serve` as a service that stays up,
a systemd user unit on Linux (a launchd LaunchAgent on macOS), started at log-in (at boot,
with lingering on) and started again when it fails.

Where the manager is missing (a container, no user session) the file is still written and
one line says what to run. Variables chosen with `--env` go into an environment file of
mode 0600 under LORE_HOME, never into the unit (launchd takes no such file: the plist,
mode 0600, holds them, and the output says so).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from lore.cli.common import print_json, show_usage
from lore.errors import ConfigError, LoreError

__all__ = ["register"]

_START = (
    "systemctl --user daemon-reload && systemctl --user enable lore && "
    "systemctl --user restart lore"
)
_LINGER = (
    "a user service stops when your last session ends; to keep Lore running logged out "
    "(and start it at boot) run once: loginctl enable-linger $USER"
)
_SECRETS = {
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "TELEGRAM_BOT_TOKEN",
    "TELEGRAM_WEBHOOK_SECRET",
    "LINE_CHANNEL_SECRET",
    "LINE_CHANNEL_ACCESS_TOKEN",
    "LORE_DATABASE_URL",
}


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "service",
        help="run `lore serve` as a service: install, uninstall, status, logs",
        description="Write and manage a systemd user unit (on macOS a launchd LaunchAgent) "
        "that runs `lore serve` with this Lore, restarts it when it fails, stops it with "
        "SIGTERM (replies in flight finish) and reloads config.toml on "
        "`systemctl --user reload lore` (SIGHUP).",
    )
    actions = parser.add_subparsers(dest="action", metavar="ACTION")

    install = actions.add_parser(
        "install",
        help="write the unit and start it (enabled at log-in)",
        description="Write ~/.config/systemd/user/lore.service (XDG_CONFIG_HOME is "
        "respected), running this Lore's `lore serve` with LORE_HOME, then reload systemd, "
        "enable and (re)start it. Installing again rewrites it.",
    )
    install.add_argument("--home", metavar="DIR", help="Lore's data directory (env: LORE_HOME)")
    install.add_argument(
        "--env",
        action="append",
        default=[],
        metavar="NAME",
        help="pass this variable (as set now) to the service, e.g. OPENAI_API_KEY; it goes "
        "into LORE_HOME/service.env (mode 0600), not the unit; repeat for several",
    )
    install.add_argument(
        "--no-start", action="store_true", help="only write the files; start nothing"
    )
    install.add_argument("--json", action="store_true", help="print what was done as JSON")
    install.set_defaults(func=_install)

    uninstall = actions.add_parser(
        "uninstall",
        help="stop the service and remove its files",
        description="Stop and disable the service, remove the unit and LORE_HOME/service.env.",
    )
    uninstall.add_argument("--home", metavar="DIR", help="Lore's data directory (env: LORE_HOME)")
    uninstall.add_argument("--json", action="store_true", help="print what was done as JSON")
    uninstall.set_defaults(func=_uninstall)

    status = actions.add_parser(
        "status",
        help="whether the service runs (systemctl --user status lore)",
        description="Show the unit's file and what the service manager says of it; exit 0 "
        "when it runs, 3 when it is stopped (as systemctl does), 1 when not installed.",
    )
    status.add_argument("--json", action="store_true", help="print the state as JSON")
    status.set_defaults(func=_status)

    logs = actions.add_parser(
        "logs",
        help="the service's output (journalctl --user -u lore)",
        description="Print what `lore serve` wrote as a service (stdout and stderr, from "
        "the journal). Its own log with every detail is LORE_HOME/lore.log.",
    )
    logs.add_argument("-n", "--lines", type=int, default=50, metavar="N", help="the last N lines")
    logs.add_argument("-f", "--follow", action="store_true", help="keep printing new lines")
    logs.add_argument("--json", action="store_true", help="one JSON object a line (journal's)")
    logs.set_defaults(func=_logs)
    parser.set_defaults(func=lambda args: show_usage(parser))


# -- where things go ---------------------------------------------------------------------


def _macos() -> bool:
    return sys.platform == "darwin"


def _unit_path() -> Path:
    from lore.config import user_config_home
    from lore.service_units import UNIT_NAME

    return user_config_home() / "systemd" / "user" / UNIT_NAME


def _plist_path() -> Path:
    from lore.service_units import LAUNCHD_LABEL

    return Path.home() / "Library" / "LaunchAgents" / f"{LAUNCHD_LABEL}.plist"


def _home(args: argparse.Namespace) -> Path:
    from lore.config import load_config

    return load_config(flags={"home": args.home}).home.absolute()


def _chosen(names: list[str]) -> dict[str, str]:
    """The values of the variables chosen with --env, as set now."""
    from lore.config import ENVIRONMENT, lore_environment

    here = lore_environment()
    chosen: dict[str, str] = {}
    for name in names:
        if name == "LORE_HOME":
            continue  # always passed, from --home or the one in effect
        if name not in ENVIRONMENT:
            raise ConfigError(
                f"--env {name}: Lore does not read {name}; it reads "
                + ", ".join(n for n in ENVIRONMENT if n != "LORE_HOME")
            )
        if name not in here:
            raise ConfigError(f"--env {name}: {name} is not set here; export it first")
        chosen[name] = here[name]
    return chosen


def _write_private(path: Path, data: bytes) -> None:
    """Write `path` readable by its owner only, from the first byte on."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as out:
        os.fchmod(out.fileno(), 0o600)
        out.write(data)


def _say(line: str, quiet: bool) -> None:
    if not quiet:
        print(f"lore service: {line}")


# -- install -----------------------------------------------------------------------------


def _install(args: argparse.Namespace) -> int:
    from lore.config import lore_environment
    from lore.service_units import (
        Service,
        environment_file,
        launchd_plist,
        lore_command,
        systemd_unit,
    )

    home = _home(args)
    chosen = _chosen(args.env)
    left = sorted(set(lore_environment()) - set(chosen) - {"LORE_HOME"})
    home.mkdir(parents=True, exist_ok=True)
    quiet = args.json
    env_file = home / "service.env"
    report: dict[str, Any] = {"home": str(home), "passed": sorted(chosen), "not_passed": left}
    if _macos():
        path = _plist_path()
        service = Service(lore_command(), home, environment=chosen)
        _write_private(path, launchd_plist(service))
        report.update(file=str(path), command=[*service.command, "serve"], env_file=None)
        _say(f"wrote {path} (lore serve with LORE_HOME={home}; started again if it fails)", quiet)
        secrets = sorted(set(chosen) & _SECRETS)
        if secrets:
            _say(
                f"{', '.join(secrets)} written into that plist (mode 0600): launchd takes "
                "no environment file",
                quiet,
            )
    else:
        path = _unit_path()
        service = Service(lore_command(), home, env_file=env_file if chosen else None)
        if chosen:
            _write_private(env_file, environment_file(chosen).encode())
        else:
            env_file.unlink(missing_ok=True)  # an earlier install's, no longer named
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(systemd_unit(service), encoding="utf-8")
        report.update(
            file=str(path),
            command=[*service.command, "serve"],
            env_file=str(env_file) if chosen else None,
        )
        _say(f"wrote {path} (lore serve with LORE_HOME={home}; restarted if it fails)", quiet)
        if chosen:
            _say(
                f"{', '.join(sorted(chosen))} written to {env_file} (mode 0600), which the "
                "unit reads; the unit holds no value",
                quiet,
            )
    if left:
        _say(
            f"set here but not passed: {', '.join(left)} (--env NAME passes one; settings "
            "in config.toml need none)",
            quiet,
        )
    started, next_step = _start(path, args.no_start, quiet)
    report.update(started=started, next=next_step)
    if not _macos():
        _say(_LINGER, quiet)
    if quiet:
        print_json(report)
    return 0


def _start(path: Path, no_start: bool, quiet: bool) -> tuple[bool, str | None]:
    """Load and (re)start what was written; or say in one line what to run."""
    if _macos():
        from lore.service_units import LAUNCHD_LABEL

        target = f"gui/{os.getuid()}"
        how = f"launchctl bootstrap {target} {path}"
        if no_start or shutil.which("launchctl") is None:
            why = "--no-start" if no_start else "launchctl is not here"
            _say(f"not started ({why}); start it with: {how}", quiet)
            return False, how
        _run(["launchctl", "bootout", f"{target}/{LAUNCHD_LABEL}"])  # an older one, if loaded
        _must(["launchctl", "bootstrap", target, str(path)])
        _say(f"started ({how}); it starts at each log-in", quiet)
        return True, None
    if no_start:
        _say(f"not started (--no-start); start it with: {_START}", quiet)
        return False, _START
    if shutil.which("systemctl") is None:
        _say(f"systemctl is not here (no systemd); where it is, run: {_START}", quiet)
        return False, _START
    reloaded = _run(["systemctl", "--user", "daemon-reload"])
    if reloaded.returncode != 0:
        _say(
            f"no systemd user session here ({_first_line(reloaded)}); in your log-in "
            f"session run: {_START}",
            quiet,
        )
        return False, _START
    _must(["systemctl", "--user", "enable", "lore.service"])
    _must(["systemctl", "--user", "restart", "lore.service"])
    _say("started and enabled (systemctl --user enable lore; restart lore)", quiet)
    return True, None


# -- uninstall, status, logs -------------------------------------------------------------


def _uninstall(args: argparse.Namespace) -> int:
    quiet = args.json
    env_file = _home(args) / "service.env"
    path = _plist_path() if _macos() else _unit_path()
    existed = path.exists()
    stopped = False
    # Only what `install` wrote is stopped: without its file there is nothing of ours.
    if existed and _macos():
        from lore.service_units import LAUNCHD_LABEL

        if shutil.which("launchctl") is not None:
            booted = _run(["launchctl", "bootout", f"gui/{os.getuid()}/{LAUNCHD_LABEL}"])
            stopped = booted.returncode == 0
    elif existed and shutil.which("systemctl") is not None:
        disabled = _run(["systemctl", "--user", "disable", "--now", "lore.service"])
        stopped = disabled.returncode == 0
    path.unlink(missing_ok=True)
    had_env = env_file.exists()
    env_file.unlink(missing_ok=True)
    if existed and not _macos() and shutil.which("systemctl") is not None:
        _run(["systemctl", "--user", "daemon-reload"])
    if quiet:
        print_json({"file": str(path), "removed": existed, "stopped": stopped})
    elif not existed:
        _say(f"not installed ({path} does not exist); nothing to remove", quiet)
    else:
        _say(f"{'stopped, disabled and ' if stopped else ''}removed {path}", quiet)
        if had_env:
            _say(f"removed {env_file}", quiet)
    return 0


def _status(args: argparse.Namespace) -> int:
    path = _plist_path() if _macos() else _unit_path()
    if not path.exists():
        if not args.json:
            raise LoreError(
                f"the service is not installed ({path}); lore service install writes it"
            )
        print_json({"installed": False, "file": str(path)})
        return 1
    tool = "launchctl" if _macos() else "systemctl"
    if shutil.which(tool) is None:
        if args.json:
            print_json({"installed": True, "file": str(path), "active": None})
        else:
            print(f"lore service: {path} is installed; {tool} is not here to say if it runs")
        return 1
    if _macos():
        from lore.service_units import LAUNCHD_LABEL

        command = ["launchctl", "print", f"gui/{os.getuid()}/{LAUNCHD_LABEL}"]
    else:
        command = ["systemctl", "--user", "status", "lore.service", "--no-pager"]
    if not args.json:
        print(f"lore service: {path}", flush=True)
        return subprocess.run(command, check=False).returncode
    if _macos():
        answer = _run(command)
        print_json({"installed": True, "file": str(path), "active": answer.returncode == 0})
        return 0 if answer.returncode == 0 else 3
    shown = _run(
        ["systemctl", "--user", "show", "lore.service", "--no-pager"]
        + ["--property=ActiveState,SubState,MainPID,NRestarts,ExecMainStartTimestamp"]
    )
    if shown.returncode != 0:
        raise LoreError(f"systemctl --user show lore: {_first_line(shown)}")
    state = dict(line.partition("=")[::2] for line in shown.stdout.splitlines() if "=" in line)
    active = state.get("ActiveState", "")
    print_json(
        {
            "installed": True,
            "file": str(path),
            "active": active,
            "state": state.get("SubState", ""),
            "pid": int(state.get("MainPID") or 0) or None,
            "restarts": int(state.get("NRestarts") or 0),
            "since": state.get("ExecMainStartTimestamp") or None,
        }
    )
    return 0 if active == "active" else 3


def _logs(args: argparse.Namespace) -> int:
    if args.lines < 1:
        raise ConfigError(f"--lines {args.lines}: give 1 or more")
    if _macos():
        log = _home(argparse.Namespace(home=None)) / "serve.log"
        command = ["tail", "-n", str(args.lines), *(["-f"] if args.follow else []), str(log)]
    else:
        command = ["journalctl", "--user", "-u", "lore.service", "--no-pager"]
        command += ["-n", str(args.lines)]
        command += ["-f"] if args.follow else []
        command += ["-o", "json"] if args.json else []
    if shutil.which(command[0]) is None:
        raise LoreError(
            f"{command[0]} is not here; `lore serve` keeps its own log in LORE_HOME/lore.log"
        )
    try:
        return subprocess.run(command, check=False).returncode
    except KeyboardInterrupt:  # Ctrl+C ends --follow
        return 0


def _run(command: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, capture_output=True, text=True, check=False)


def _must(command: list[str]) -> None:
    done = _run(command)
    if done.returncode != 0:
        raise LoreError(f"{' '.join(command)} failed: {_first_line(done)}")


def _first_line(done: subprocess.CompletedProcess[str]) -> str:
    text = (done.stderr or done.stdout or "").strip()
    return text.splitlines()[0] if text else f"exit code {done.returncode}"
