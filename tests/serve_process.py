"""A real `lore serve` in its own process on a free port, for tests that signal it, and a
small supervisor that restarts it as systemd does. Its output is read line by line in a
thread, so a test waits for a line instead of sleeping."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx

from lore.config import load_config
from lore.llm.scripted import ScriptedProvider
from lore.runtime import build

READY = "Ctrl+C stops"  # the line `lore serve` prints once everything runs


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class ServeProcess:
    """`command serve --port PORT` (default `python -m lore`) with `env`."""

    def __init__(
        self, env: dict[str, str], *, port: int, command: tuple[str, ...] | None = None
    ) -> None:
        self.env = env
        self.port = port
        self.command = command or (sys.executable, "-m", "lore")
        self.lines: list[str] = []
        self._changed = threading.Condition()
        self.process: subprocess.Popen[str] | None = None

    def start(self) -> ServeProcess:
        self.process = subprocess.Popen(
            [*self.command, "serve", "--port", str(self.port)],
            env=self.env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            bufsize=1,
        )
        threading.Thread(target=self._read, args=(self.process,), daemon=True).start()
        return self

    def _read(self, process: subprocess.Popen[str]) -> None:
        assert process.stdout is not None
        for line in process.stdout:
            with self._changed:
                self.lines.append(line.rstrip("\n"))
                self._changed.notify_all()

    @property
    def output(self) -> str:
        with self._changed:
            return "\n".join(self.lines)

    def count(self, text: str) -> int:
        with self._changed:
            return sum(text in line for line in self.lines)

    def wait_for(self, text: str, *, times: int = 1, timeout: float = 20.0) -> None:
        """Until `text` is in `times` lines of the output (all the runs' output so far)."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while sum(text in line for line in self.lines) < times:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(
                        f"no {text!r} (x{times}) within {timeout} s:\n{self.output}"
                    )
                self._changed.wait(left)

    def wait_delivered(self, ids: list[int], timeout: float = 20.0) -> None:
        """Until each reminder's delivery line was printed (by any of the runs)."""
        for rid in ids:
            self.wait_for(f"delivered reminder #{rid} to ", timeout=timeout)

    def send(self, signum: int = signal.SIGTERM) -> None:
        assert self.process is not None
        self.process.send_signal(signum)

    def wait(self, timeout: float = 30.0) -> int:
        assert self.process is not None
        code = self.process.wait(timeout)
        time.sleep(0.05)  # the reader thread takes the last lines
        return code

    def stop(self) -> None:
        """Whatever happened, leave no process behind."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()

    def client(self, home: Path) -> httpx.Client:
        """An HTTP client for its gateway, with the owner's token."""
        token = (home / "api_token").read_text(encoding="utf-8").strip()
        return httpx.Client(
            base_url=f"http://127.0.0.1:{self.port}",
            headers={"Authorization": f"Bearer {token}"},
            timeout=30,
        )


def add_reminders(home: Path, texts: list[str], *, first_in: float, every: float) -> list[int]:
    """Reminders added by another process (as `lore remind add` does), due from
    `first_in` seconds on, `every` seconds apart; their ids."""
    lore = build(load_config(flags={"home": str(home)}), provider=ScriptedProvider())
    now = datetime.now(UTC)
    ids = []
    for n, text in enumerate(texts):
        due = now + timedelta(seconds=first_in + n * every)
        ids.append(lore.reminders.add("cli:default", "anna", text, due, timezone="UTC", now=now).id)
    lore.db.close()
    return ids


RESTART_SECONDS = 0.2  # the unit's RestartSec, shortened


class Supervisor:
    """Runs `lore serve` until `stop()`; a run that ends other than by a clean exit is
    started again after RESTART_SECONDS, as Restart=on-failure does."""

    def __init__(self, serve: ServeProcess) -> None:
        self.serve = serve
        self.exits: list[int] = []
        self._restarting = False
        self._stopping = False
        self._thread = threading.Thread(target=self._supervise, daemon=True)

    def start(self) -> Supervisor:
        self.serve.start()
        self._thread.start()
        return self

    def _supervise(self) -> None:
        while True:
            code = self.serve.wait(timeout=120)
            self.exits.append(code)
            if self._stopping or (code == 0 and not self._restarting):
                return
            self._restarting = False
            time.sleep(RESTART_SECONDS)
            self.serve.start()

    def restart(self) -> None:
        """`systemctl --user restart lore`: SIGTERM, then start again."""
        self._restarting = True
        self.serve.send(signal.SIGTERM)

    def kill(self) -> None:
        self.serve.send(signal.SIGKILL)

    def stop(self) -> None:
        self._stopping = True
        self.serve.send(signal.SIGTERM)
        self._thread.join(60)
