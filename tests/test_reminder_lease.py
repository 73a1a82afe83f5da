"""A reminder is delivered once and never lost: claim with a lease, deliver with an
idempotency key, mark done. Processes are killed with SIGKILL at the worst moments."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from lore.clock import FixedClock
from lore.config import load_config
from lore.reminders.delivery import session_delivery
from lore.reminders.scheduler import Scheduler
from lore.runtime import build

NOW = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
SCOPE = "cli:default"

# A process that claims the due reminders and leases them, writes (or not) the session
# line, says so, then hangs: the test kills it there with SIGKILL.
_CHILD = textwrap.dedent(
    """
    import asyncio, sys, time
    from datetime import datetime, timedelta, UTC
    from lore.config import load_config
    from lore.reminders.delivery import Delivery, session_delivery
    from lore.runtime import build

    now = datetime.fromisoformat(sys.argv[2])
    lore = build(load_config(flags={"home": sys.argv[1], "model": "scripted"}))
    lore.reminders.claim_due(now)
    owner = lore.lease_holder.name if sys.argv[4] == "holder" else "doomed"
    items = lore.outbox.lease(owner=owner, now=now, seconds=60)
    if sys.argv[3] == "after-write":
        deliver = session_delivery(lore.sessions, lambda scope: None)
        for item in items:
            asyncio.run(deliver(Delivery(item, now)))
    print(len(items), flush=True)
    time.sleep(600)
    """
)


def _leasing(home: Path, now: datetime, moment: str, owner: str) -> subprocess.Popen[str]:
    """A process that has leased the due reminders and hangs; and how many it leased."""
    return subprocess.Popen(
        [sys.executable, "-c", _CHILD, str(home), now.isoformat(), moment, owner],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "LORE_HOME": str(home)},
    )


def _killed_mid_delivery(home: Path, now: datetime, moment: str, owner: str = "named") -> int:
    child = _leasing(home, now, moment, owner)
    assert child.stdout is not None
    leased = int(child.stdout.readline())
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    return leased


def _add(home: Path, count: int) -> None:
    lore = build(load_config(flags={"home": str(home), "model": "scripted"}))
    for n in range(count):
        lore.reminders.add(SCOPE, "john", f"task {n}", NOW, timezone="UTC", now=NOW)
    lore.db.close()


async def _restart_and_deliver(home: Path, at: datetime, *, holder: bool = False) -> list[int]:
    lore = build(load_config(flags={"home": str(home), "model": "scripted"}), clock=FixedClock(at))
    deliver = session_delivery(lore.sessions, lambda scope: None)
    scheduler = Scheduler(
        lore.reminders, lore.clock, deliver, holder=lore.lease_holder if holder else None
    )
    delivered = await scheduler.run_once(at)
    lore.close()
    return [d.id for d in delivered]


def _session_reminders(home: Path) -> list[int]:
    lore = build(load_config(flags={"home": str(home), "model": "scripted"}))
    return [m["reminder_id"] for m in lore.session(SCOPE).messages if "reminder_id" in m]


async def test_killed_between_claim_and_delivery_each_reminder_arrives_once(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    _add(home, 3)
    assert _killed_mid_delivery(home, NOW, "before-write") == 3
    # While the dead process's lease runs, nobody else takes the items...
    assert await _restart_and_deliver(home, NOW + timedelta(seconds=30)) == []
    # ...and once it ran out, the restarted scheduler delivers each of them, once.
    assert sorted(await _restart_and_deliver(home, NOW + timedelta(minutes=2))) == [1, 2, 3]
    assert await _restart_and_deliver(home, NOW + timedelta(minutes=5)) == []
    assert sorted(_session_reminders(home)) == [1, 2, 3]


async def test_what_a_killed_process_held_is_delivered_at_once_not_when_its_lease_runs_out(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    _add(home, 3)
    living = _leasing(home, NOW, "before-write", "holder")
    try:
        assert living.stdout is not None and int(living.stdout.readline()) == 3
        # Its holder lives: its leases stand, though it is slow.
        assert await _restart_and_deliver(home, NOW + timedelta(seconds=1), holder=True) == []
    finally:
        living.kill()  # SIGKILL
        living.wait()
    soon = NOW + timedelta(seconds=2)  # its lease would run for another 58 seconds
    assert sorted(await _restart_and_deliver(home, soon, holder=True)) == [1, 2, 3]
    assert await _restart_and_deliver(home, NOW + timedelta(minutes=5), holder=True) == []
    assert sorted(_session_reminders(home)) == [1, 2, 3]


async def test_killed_after_writing_the_session_line_it_is_not_written_twice(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    _add(home, 2)
    assert _killed_mid_delivery(home, NOW, "after-write") == 2
    assert sorted(await _restart_and_deliver(home, NOW + timedelta(minutes=2))) == [1, 2]
    assert sorted(_session_reminders(home)) == [1, 2]  # still one line each


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_a_reminder_shows_up_in_a_running_chat_once_while_serve_runs(tmp_path: Path) -> None:
    """`lore remind add` in one shell, `lore chat` in another, `lore serve` in a third."""
    import pty
    import select

    home = tmp_path / "home"
    home.mkdir()
    (home / "config.toml").write_text("[reminders]\npoll_seconds = 0.5\n")
    env = {
        **os.environ,
        "LORE_HOME": str(home),
        "LORE_MODEL": "openai/gpt-4o-mini",
        "OPENAI_API_KEY": "sk-test-unused",
        "OPENAI_BASE_URL": "http://127.0.0.1:9/v1",
        "LORE_TIMEZONE": "UTC",
    }
    lore_cmd = [sys.executable, "-m", "lore"]
    serve = subprocess.Popen(
        [*lore_cmd, "serve", "--port", str(_free_port())],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    pid, fd = pty.fork()
    if pid == 0:  # the chat, in a real terminal
        os.execvpe(sys.executable, [*lore_cmd, "chat"], {**env, "TERM": "xterm"})
    try:
        screen = b""
        deadline = time.monotonic() + 20

        def read_until(marker: bytes) -> bool:
            nonlocal screen
            while time.monotonic() < deadline:
                ready, _, _ = select.select([fd], [], [], 0.2)
                if ready:
                    try:
                        screen += os.read(fd, 4096)
                    except OSError:
                        return False
                if marker in screen:
                    return True
            return False

        assert read_until(b"/help for commands"), screen
        # Relative, so it is still ahead when a busy machine starts the command late.
        subprocess.run(
            [*lore_cmd, "remind", "add", "stretch your legs", "--when", "in 2 seconds"],
            env=env,
            check=True,
            capture_output=True,
        )
        assert read_until(b"stretch your legs"), screen
        time.sleep(2)  # time for a second delivery, if there were one
        read_until(b"\x00never")
        assert screen.count(b"stretch your legs") == 1
    finally:
        os.kill(pid, signal.SIGTERM)
        os.waitpid(pid, 0)
        serve.send_signal(signal.SIGINT)
        out, _ = serve.communicate(timeout=20)
    assert "stretch your legs" not in out  # the chat delivered it; serve left it alone
    assert _session_reminders(home) == [1]


async def test_a_reminder_that_cannot_be_delivered_stays_visible_as_failed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import json as json_module

    from lore.cli import main
    from lore.ports.outbox import MAX_ATTEMPTS

    home = tmp_path / "home"
    _add(home, 1)
    lore = build(load_config(flags={"home": str(home), "model": "scripted"}))

    async def unreachable(due: object) -> None:
        raise OSError("the channel is down")

    scheduler = Scheduler(lore.reminders, FixedClock(NOW), unreachable)
    for attempt in range(MAX_ATTEMPTS):
        await scheduler.run_once(NOW + timedelta(days=attempt))
    [item] = lore.outbox.items(SCOPE)
    assert item.status == "failed" and item.attempts == MAX_ATTEMPTS
    lore.db.close()

    assert main(["remind", "list", "--home", str(home)]) == 0
    out = capsys.readouterr().out
    assert "task 0 — failed after 8 attempt(s): the channel is down" in out
    assert main(["remind", "list", "--json", "--home", str(home)]) == 0
    [row] = json_module.loads(capsys.readouterr().out)
    assert row["undelivered"][0]["status"] == "failed"
