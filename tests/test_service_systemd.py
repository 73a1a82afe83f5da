"""`lore service install` under a real systemd: Debian's systemd as a user manager, started
in a bubblewrap sandbox whose /run says the machine booted with systemd (the one thing a
container lacks), with its own XDG_RUNTIME_DIR and XDG_CONFIG_HOME under the test's
directory. Every command runs as a user would type it: install starts and enables the
unit; a `kill -9` is started again by Restart=on-failure; `systemctl --user restart`
stops it with SIGTERM; stop, status and uninstall say what they did. Reminders due
across the kill and the restart are each delivered once, and a message sent over HTTP
is in the transcript with its reply."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from tests import crash_runs
from tests.openai_server import FakeOpenAI
from tests.serve_process import add_reminders, free_port

SYSTEMD = Path("/usr/lib/systemd/systemd")

pytestmark = pytest.mark.skipif(
    shutil.which("bwrap") is None or not SYSTEMD.exists() or shutil.which("systemctl") is None,
    reason="needs Debian's systemd and bubblewrap (make bubblewrap)",
)


@dataclass
class UserManager:
    """A systemd user manager of the test's own, and how to run a command beside it."""

    env: dict[str, str]
    process: subprocess.Popen[bytes]

    def run(self, *command: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            _sandbox(self.env, list(command)),
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        if check:
            assert done.returncode == 0, f"{command}: {done.stdout}{done.stderr}"
        return done

    def lore(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return self.run(sys.executable, "-m", "lore", *args, check=check)

    def show(self, *properties: str) -> dict[str, str]:
        shown = self.run(
            "systemctl", "--user", "show", "lore.service", f"--property={','.join(properties)}"
        )
        return dict(line.partition("=")[::2] for line in shown.stdout.splitlines())


def _sandbox(env: dict[str, str], command: list[str]) -> list[str]:
    """`command` with /run as a booted systemd machine's (the rest of the filesystem is
    this one's): each call gets its own mount namespace, the processes are shared."""
    settings = [arg for name, value in env.items() for arg in ("--setenv", name, value)]
    return [
        "bwrap", "--bind", "/", "/", "--dev", "/dev", "--tmpfs", "/run",
        "--dir", "/run/systemd/system", "--die-with-parent", "--clearenv", *settings,
        *command,
    ]  # fmt: skip


@pytest.fixture
def manager(tmp_path: Path, server: FakeOpenAI) -> Iterator[UserManager]:
    runtime_dir = tmp_path / "xdg-runtime"
    runtime_dir.mkdir(mode=0o700)
    home = tmp_path / "lore-home"
    env = crash_runs.environment(home, server)
    env.update(
        HOME=str(tmp_path / "user"),
        XDG_RUNTIME_DIR=str(runtime_dir),
        XDG_CONFIG_HOME=str(tmp_path / "user" / ".config"),
        PATH=f"{Path(sys.executable).parent}:/usr/bin:/bin",
    )
    process = subprocess.Popen(
        _sandbox(env, [str(SYSTEMD), "--user", "--log-target=console"]),
        stdout=subprocess.DEVNULL,
        stderr=(tmp_path / "systemd.log").open("wb"),
    )
    started = UserManager(env, process)
    try:
        deadline = time.monotonic() + 15
        while started.run("systemctl", "--user", "is-system-running", check=False).stdout.strip() \
                not in {"running", "degraded"}:  # fmt: skip
            if process.poll() is not None or time.monotonic() > deadline:
                log = (tmp_path / "systemd.log").read_text(errors="replace")
                pytest.skip(f"systemd does not run as a user manager here: {log[-300:]}")
            time.sleep(0.1)
        yield started
    finally:
        started.run("systemctl", "--user", "stop", "lore.service", check=False)
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    fake = FakeOpenAI().start()
    yield fake
    fake.stop()


def _home(manager: UserManager) -> Path:
    return Path(manager.env["LORE_HOME"])


def _running_pid(manager: UserManager, *, other_than: int = 0, timeout: float = 20) -> int:
    """The service's main process once it runs and its gateway answers."""
    port = _port(manager)
    deadline = time.monotonic() + timeout
    while True:
        state = manager.show("ActiveState", "MainPID")
        pid = int(state.get("MainPID") or 0)
        if state.get("ActiveState") == "active" and pid not in {0, other_than}:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200:
                    return pid
            except httpx.TransportError:
                pass
        assert time.monotonic() < deadline, f"the service did not come up: {state}"
        time.sleep(0.1)


def _port(manager: UserManager) -> int:
    text = (_home(manager) / "config.toml").read_text(encoding="utf-8")
    return int(text.split("[api]\nport = ", 1)[1].split("\n", 1)[0])


def _delivered(home: Path) -> Counter[int]:
    messages, _ = crash_runs.transcript_lines(home)
    return Counter(int(m["reminder_id"]) for m in messages if "reminder_id" in m)


def _wait_delivered(home: Path, ids: list[int], timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not set(ids) <= set(_delivered(home)):
        assert time.monotonic() < deadline, f"not delivered: {set(ids) - set(_delivered(home))}"
        time.sleep(0.1)


def test_installed_it_runs_restarts_after_kill_9_and_stops_losing_and_repeating_nothing(
    manager: UserManager, server: FakeOpenAI
) -> None:
    home = _home(manager)
    crash_runs.prepare(home)
    with (home / "config.toml").open("a", encoding="utf-8") as settings:
        settings.write(f"[reminders]\npoll_seconds = 0.2\n[api]\nport = {free_port()}\n")
    names = ("OPENAI_API_KEY", "OPENAI_BASE_URL", "LORE_MODEL", "LORE_USER", "LORE_TIMEZONE")
    installed = manager.lore("service", "install", *(f"--env={name}" for name in names))
    assert "started and enabled" in installed.stdout + installed.stderr, installed
    unit = Path(manager.env["XDG_CONFIG_HOME"]) / "systemd" / "user" / "lore.service"
    assert unit.is_file() and "sk-test" not in unit.read_text(encoding="utf-8")
    assert manager.run("systemctl", "--user", "is-enabled", "lore.service").stdout.strip() == (
        "enabled"
    )
    first = _running_pid(manager)
    status = json.loads(manager.lore("service", "status", "--json").stdout)
    assert status["active"] == "active" and status["pid"] == first, status

    expected = add_reminders(home, ["one", "two"], first_in=0.3, every=0.3)
    _wait_delivered(home, expected)
    server.reply("Noted: the report is due on Friday.")
    token = (home / "api_token").read_text(encoding="utf-8").strip()
    answer = httpx.post(
        f"http://127.0.0.1:{_port(manager)}/v1/chat/completions",
        headers={"Authorization": f"Bearer {token}"},
        json={"model": "lore", "messages": [{"role": "user", "content": "Report: Friday"}]},
        timeout=30,
    )
    assert answer.status_code == 200, answer.text

    # kill -9: systemd starts it again (RestartSec=5), which delivers what came due meanwhile.
    expected += add_reminders(home, ["during", "the", "restart"], first_in=0.5, every=0.5)
    os.kill(first, signal.SIGKILL)
    second = _running_pid(manager, other_than=first)
    _wait_delivered(home, expected)
    assert int(manager.show("NRestarts")["NRestarts"]) == 1

    # A restart asked for: SIGTERM, a clean stop (not counted as a failure), a new start.
    expected += add_reminders(home, ["after", "restart"], first_in=1.0, every=0.3)
    manager.run("systemctl", "--user", "restart", "lore.service")
    _running_pid(manager, other_than=second)
    _wait_delivered(home, expected)

    manager.run("systemctl", "--user", "stop", "lore.service")
    stopped = manager.lore("service", "status", "--json", check=False)
    assert stopped.returncode == 3 and json.loads(stopped.stdout)["active"] == "inactive"
    ended = manager.show("Result", "ExecMainStatus")
    assert ended == {"Result": "success", "ExecMainStatus": "0"}, ended  # exit 0 on SIGTERM

    removed = manager.lore("service", "uninstall")
    assert "removed" in removed.stdout + removed.stderr and not unit.exists()
    assert not (home / "service.env").exists()

    assert _delivered(home) == Counter(expected)  # each once, across the kill and the restart
    messages, corrupted = crash_runs.transcript_lines(home)
    assert corrupted == 0
    said = [(m["role"], m["content"]) for m in messages if "reminder_id" not in m]
    assert said == [
        ("user", "Report: Friday"),
        ("assistant", "Noted: the report is due on Friday."),
    ]
