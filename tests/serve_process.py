"""A real `lore serve` in its own process on a free port, for tests that signal it. Its
output is read line by line in a thread, so a test waits for a line instead of sleeping."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx

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
