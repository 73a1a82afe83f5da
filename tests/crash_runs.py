"""Kill -9 runs against a real `lore` process, and the counts that judge them.

Each scenario runs a child `lore` process, SIGKILLs it at a random moment, and checks
what any later start sees: `corrupted` (a line or file that does not parse, a database
that fails its integrity check), `lost` (something the user saw, or a reminder that fell
due, that is nowhere afterwards) and `duplicated` (the same message or reminder twice).
The fast versions in `tests/` run a few kills; `tests/torture/` runs each 100+ times.
"""

from __future__ import annotations

import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tests.openai_server import FakeOpenAI

SRC = str(Path(__file__).resolve().parents[1] / "src")


@dataclass
class Tally:
    runs: int = 0
    killed: int = 0
    lost: int = 0
    duplicated: int = 0
    corrupted: int = 0
    notes: list[str] = field(default_factory=list)

    def line(self, name: str) -> str:
        return (
            f"{name}: {self.runs} runs, {self.killed} killed mid-way; lost {self.lost}, "
            f"duplicated {self.duplicated}, corrupted {self.corrupted}"
        )

    @property
    def clean(self) -> bool:
        return self.lost == self.duplicated == self.corrupted == 0


def environment(home: Path, server: FakeOpenAI | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI", "LORE"))}
    env.update(LORE_HOME=str(home), LORE_USER="anna", PYTHONPATH=SRC, LORE_TIMEZONE="UTC")
    if server is not None:
        env.update(
            OPENAI_API_KEY="sk-test",
            OPENAI_BASE_URL=server.base_url,
            LORE_MODEL="openai/gpt-4o-mini",
        )
    return env


def prepare(home: Path) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(
        "[extraction]\nenabled = false\n[session_memory]\nenabled = false\n"
        "[consolidation]\nidle_minutes = 0\n"
    )


def kill_after(args: list[str], env: dict[str, str], delay: float) -> tuple[bool, str, float]:
    """Run `lore ARGS`, SIGKILL it after `delay` seconds unless it ended first;
    (killed, its stdout, seconds it ran)."""
    started = time.monotonic()
    child = subprocess.Popen(
        [sys.executable, "-m", "lore", *args],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    try:
        child.wait(timeout=delay)
        killed = False
    except subprocess.TimeoutExpired:
        child.send_signal(signal.SIGKILL)
        child.wait()
        killed = True
    out = child.stdout.read() if child.stdout else b""
    if child.stdout:
        child.stdout.close()
    return killed, out.decode("utf-8", "replace"), time.monotonic() - started


class Moments:
    """Kill moments spread over a whole run on this machine: the first run is left to
    finish and timed (and every later run that finishes before its kill times it again,
    the fastest counting), later ones are killed anywhere from before the work starts to
    about when it should end."""

    def __init__(self, seed: int) -> None:
        self._rng = random.Random(seed)
        self._whole: float | None = None

    def next(self) -> float:
        if self._whole is None:
            return 600.0
        return self._rng.uniform(0.35 * self._whole, 1.0 * self._whole)

    def ran(self, seconds: float, *, killed: bool = False) -> None:
        if not killed and (self._whole is None or seconds < self._whole):
            self._whole = seconds


# -- what a later start sees -------------------------------------------------------------


def transcript_lines(home: Path) -> tuple[list[dict[str, Any]], int]:
    """Every message line of every live and archived transcript, and how many lines did
    not parse (a torn last line of a live session, which the next writer cuts, is not
    counted)."""
    sessions = home / "sessions"
    messages: list[dict[str, Any]] = []
    corrupted = 0
    if not sessions.exists():
        return messages, 0
    files = [p for p in sessions.glob("*.jsonl") if p.name != "_sessions.jsonl"]
    files += list((sessions / "archive").glob("*.jsonl")) if (sessions / "archive").exists() else []
    for path in files:
        raw = path.read_bytes()
        lines = raw.split(b"\n")
        if lines and lines[-1] == b"":
            lines.pop()
        elif lines and path.parent == sessions:
            lines.pop()  # torn tail of a live session
        for number, line in enumerate(lines):
            try:
                data = json.loads(line)
            except ValueError:
                corrupted += 1
                continue
            if number == 0:
                if data.get("_type") != "metadata":
                    corrupted += 1
                continue
            messages.append(data)
    index = sessions / "_sessions.jsonl"
    if index.exists():
        for line in index.read_bytes().split(b"\n")[:-1]:
            try:
                json.loads(line)
            except ValueError:
                corrupted += 1
    return messages, corrupted


def database_damaged(home: Path) -> bool:
    path = home / "lore.db"
    if not path.exists():
        return False
    conn = sqlite3.connect(str(path))
    try:
        verdict: str = conn.execute("PRAGMA integrity_check").fetchone()[0]
        return verdict != "ok"
    except sqlite3.DatabaseError:
        return True
    finally:
        conn.close()


def messages_once(home: Path) -> Counter[str]:
    """Message contents across the live sessions and the archived transcripts the index
    lists. A transcript a killed close wrote but never indexed is not counted: nothing
    reads it, and the next close of that session rewrites it whole."""
    sessions = home / "sessions"
    indexed: set[str] = set()
    index = sessions / "_sessions.jsonl"
    if index.exists():
        for line in index.read_bytes().split(b"\n")[:-1]:
            try:
                data = json.loads(line)
            except ValueError:
                continue
            if isinstance(data, dict) and data.get("transcript_path"):
                indexed.add(str(data["transcript_path"]))
    counted: Counter[str] = Counter()
    files = [p for p in sessions.glob("*.jsonl") if p.name != "_sessions.jsonl"]
    archive = sessions / "archive"
    if archive.exists():
        files += [p for p in archive.glob("*.jsonl") if p.relative_to(home).as_posix() in indexed]
    for path in files:
        for line in path.read_bytes().split(b"\n")[1:]:
            try:
                data = json.loads(line)
            except ValueError:
                continue
            if isinstance(data, dict) and "role" in data:
                counted[str(data.get("content"))] += 1
    return counted


# -- scenarios -----------------------------------------------------------------------------


def turn_kills(home: Path, server: FakeOpenAI, runs: int, *, seed: int = 0) -> Tally:
    """`lore chat -m` killed at random while the reply streams. Whatever was shown in full
    must be in the transcript afterwards; no message twice; every line parses."""
    moments = Moments(seed)
    prepare(home)
    env = environment(home, server)
    tally = Tally()
    server.chunk_delay = 0.004
    shown: list[str] = []
    completed: list[str] = []
    for n in range(runs):
        server.clear()
        reply = f"Ответ {n}: " + "слово " * 60 + f"конец {n}."
        server.reply(reply)
        killed, out, seconds = kill_after(["chat", "-m", f"ход {n} 第{n}轮"], env, moments.next())
        moments.ran(seconds, killed=killed)
        tally.runs += 1
        tally.killed += killed
        if reply in out:
            shown.append(reply)
        if not killed:
            completed.append(reply)
        seen = messages_once(home)
        _, corrupted = transcript_lines(home)
        tally.corrupted += corrupted + database_damaged(home)
        tally.duplicated += sum(1 for text, count in seen.items() if count > 1)
    seen = messages_once(home)
    for reply in set(shown) | set(completed):
        if seen[reply] == 0:
            tally.lost += 1
            tally.notes.append(f"shown but lost: {reply[:20]}")
    return tally


def new_kills(home: Path, runs: int, *, seed: int = 0, size: int = 1500) -> Tally:
    """`/new` on a long session killed at random: every message stays in the live session
    or an archive, exactly once after recovery; every line parses."""
    from lore.backends.local.live import LiveSession
    from lore.config import load_config
    from lore.llm.scripted import ScriptedProvider
    from lore.runtime import build
    from lore.sessions.closing import recover_interrupted

    moments = Moments(seed)
    prepare(home)
    env = environment(home)
    env["LORE_MODEL"] = "scripted"
    tally = Tally()
    written: list[str] = []
    config = load_config(env={"LORE_HOME": str(home), "USER": "anna"}, flags={"model": "scripted"})
    for n in range(runs):
        batch = [f"run {n} message {i} сообщение" for i in range(size)]
        LiveSession(config.sessions_dir, "cli:default").append(
            [{"role": "user", "content": text} for text in batch]
        )
        written += batch
        killed, _, seconds = kill_after(["chat", "-m", "/new"], env, moments.next())
        moments.ran(seconds, killed=killed)
        tally.runs += 1
        tally.killed += killed
        _, corrupted = transcript_lines(home)
        tally.corrupted += corrupted
    lore = build(config, provider=ScriptedProvider())
    recover_interrupted(lore, min_age=0)
    seen = messages_once(home)
    tally.lost = sum(1 for text in written if seen[text] == 0)
    tally.duplicated = sum(1 for text in written if seen[text] > 1)
    return tally


def serve_kills(home: Path, runs: int, *, per_run: int = 60, seed: int = 0) -> Tally:
    """`lore serve --once` with reminders due, killed at random, then run again to the end;
    finally a start after every lease ran out: every reminder is in its conversation
    exactly once."""
    from lore.config import load_config
    from lore.llm.scripted import ScriptedProvider
    from lore.runtime import build

    moments = Moments(seed)
    prepare(home)
    env = environment(home)
    env["LORE_MODEL"] = "scripted"
    config = load_config(env={"LORE_HOME": str(home), "USER": "anna"}, flags={"model": "scripted"})
    tally = Tally()
    expected: set[int] = set()
    for n in range(runs):
        runtime = build(config, provider=ScriptedProvider())
        store = runtime.reminders
        now = datetime.now(UTC)
        for i in range(per_run):
            reminder = store.add(
                f"cli:r{i % 3}", "anna", f"напоминание {n}-{i}", now, timezone="UTC", now=now
            )
            expected.add(reminder.id)
        runtime.db.close()
        killed, _, seconds = kill_after(["serve", "--once"], env, moments.next())
        moments.ran(seconds, killed=killed)
        tally.runs += 1
        tally.killed += killed
        subprocess.run(
            [sys.executable, "-m", "lore", "serve", "--once"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=120,
            check=False,
        )
        _, corrupted = transcript_lines(home)
        tally.corrupted += corrupted + database_damaged(home)
    _restart_after_leases_ran_out(config)
    messages, _ = transcript_lines(home)
    delivered = Counter(int(m["reminder_id"]) for m in messages if "reminder_id" in m)
    tally.lost = sum(1 for rid in expected if delivered[rid] == 0)
    tally.duplicated = sum(1 for rid in expected if delivered[rid] > 1)
    return tally


def _restart_after_leases_ran_out(config: Any) -> None:
    """A later start, once every lease a killed process held has run out (leases last a
    minute; the clock is moved on instead of waiting)."""
    import asyncio
    from datetime import timedelta

    from lore.clock import FixedClock
    from lore.llm.scripted import ScriptedProvider
    from lore.reminders.delivery import session_delivery
    from lore.reminders.scheduler import Scheduler
    from lore.runtime import build

    later = FixedClock(datetime.now(UTC) + timedelta(minutes=5))
    runtime = build(config, provider=ScriptedProvider(), clock=later)

    async def finish() -> None:
        deliver = session_delivery(runtime.sessions, lambda scope: None)
        await Scheduler(runtime.reminders, later, deliver).run_once()

    try:
        asyncio.run(finish())
    finally:
        runtime.db.close()
