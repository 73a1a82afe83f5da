"""`lore remind list|add|cancel` and `lore serve --once`, run in-process."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from lore.backends.local.database import Database
from lore.backends.local.live import LiveSession
from lore.backends.local.reminders import SQLiteReminderStore
from lore.cli import main
from lore.messages import content_text


@pytest.fixture(autouse=True)
def _taipei(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LORE_TIMEZONE", "Asia/Taipei")
    monkeypatch.setenv("LORE_USER", "john")


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def listed(capsys: pytest.CaptureFixture[str], *extra: str) -> list[dict[str, object]]:
    code, out, _ = run(capsys, "remind", "list", "--json", *extra)
    assert code == 0
    result: list[dict[str, object]] = json.loads(out)
    return result


def test_add_states_the_local_fire_time_and_list_shows_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = run(capsys, "remind", "add", "call mom", "--when", "in 10 minutes")
    assert (code, err) == (0, "")
    assert re.fullmatch(
        r"Reminder #1 set for \w{3} \d{4}-\d\d-\d\d \d\d:\d\d \(Asia/Taipei\), in 10 min\.\n", out
    )
    code, out, _ = run(capsys, "remind", "list")
    assert code == 0
    assert re.fullmatch(r"#1 .* \(Asia/Taipei\), in 10 min — call mom \(by john\)\n", out)


def test_add_with_an_iso_time_and_json_output(capsys: pytest.CaptureFixture[str]) -> None:
    when = (datetime.now(UTC) + timedelta(days=1)).replace(microsecond=0)
    code, out, _ = run(capsys, "remind", "add", "dentist", "--when", when.isoformat(), "--json")
    assert code == 0
    data = json.loads(out)
    assert data["due_at"] == when.isoformat()
    assert (data["text"], data["scope"], data["author"], data["timezone"]) == (
        "dentist",
        "cli:default",
        "john",
        "Asia/Taipei",
    )


def test_add_a_recurring_reminder(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "remind", "add", "stand up", "--every", "weekdays 10:00")
    assert code == 0
    assert out.endswith("then repeating weekly mon,tue,wed,thu,fri 10:00.\n")
    assert listed(capsys)[0]["recurrence"] == "weekly mon,tue,wed,thu,fri 10:00"


def test_sessions_keep_their_own_reminders(capsys: pytest.CaptureFixture[str]) -> None:
    run(capsys, "remind", "add", "family thing", "--when", "in 1 hour", "--session", "line:g1")
    assert listed(capsys) == []
    assert [r["text"] for r in listed(capsys, "--session", "line:g1")] == ["family thing"]


def test_cancel_removes_it_from_the_pending_list(capsys: pytest.CaptureFixture[str]) -> None:
    run(capsys, "remind", "add", "call mom", "--when", "in 10 minutes")
    code, out, _ = run(capsys, "remind", "cancel", "#1")
    assert (code, out) == (0, "Cancelled reminder #1: call mom\n")
    assert listed(capsys) == []
    assert [r["status"] for r in listed(capsys, "--all")] == ["cancelled"]
    code, out, _ = run(capsys, "remind", "list")
    assert out == "No pending reminders in cli:default.\n"


@pytest.mark.parametrize(
    ("args", "reason"),
    [
        (["add", "x", "--when", "blah"], "could not understand the time 'blah'"),
        (["add", "x", "--when", "2020-01-01T09:00:00+08:00"], "not in the future"),
        (["add", "x", "--when", "明天25点"], "not a valid time"),
        (["add", "x", "--every", "cron 0 0 31 2 *"], "never fires"),
        (["add", "x", "--when", "in 5 minutes", "--every", "sometimes"], "unknown recurrence"),
        (["add", "x"], "needs a time"),
        (["add", "   ", "--when", "in 5 minutes"], "needs some text"),
        (["cancel", "7"], "no reminder #7"),
        (["cancel", "99999999999999999999999"], "no reminder #99999999999999999999999"),
        (["cancel", "soon"], "not a reminder number"),
        (["cancel", "²"], "not a reminder number"),
    ],
)
def test_bad_input_is_one_line_on_stderr_exit_1_and_nothing_stored(
    capsys: pytest.CaptureFixture[str], args: list[str], reason: str
) -> None:
    code, out, err = run(capsys, "remind", *args)
    assert code == 1
    assert out == ""
    assert err.startswith("lore: ") and err.count("\n") == 1
    assert reason in err
    assert listed(capsys, "--all") == []


def test_remind_without_an_action_prints_usage(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "remind")
    assert code == 1
    assert "list" in out and "add" in out and "cancel" in out


def test_serve_once_delivers_what_fell_due_into_the_session(
    capsys: pytest.CaptureFixture[str], home: Path
) -> None:
    now = datetime.now(UTC)
    db = Database(home / "lore.db")
    store = SQLiteReminderStore(db)
    store.add("cli:default", "john", "water the plants", now - timedelta(minutes=5),
              timezone="Asia/Taipei", now=now - timedelta(minutes=10))  # fmt: skip
    db.close()
    code, out, _ = run(capsys, "serve", "--once")
    assert code == 0
    assert re.fullmatch(
        r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d \+0800 delivered reminder #1 to cli:default "
        r"\(late\): water the plants\n",
        out,
    )
    [message] = LiveSession(home / "sessions", "cli:default").messages
    assert content_text(message["content"]).startswith(
        "⏰ Reminder for @john: water the plants (late)"
    )
    assert [r["status"] for r in listed(capsys, "--all")] == ["delivered"]
    assert run(capsys, "serve", "--once")[1] == ""  # nothing twice


def test_a_delivery_line_that_cannot_be_printed_does_not_deliver_the_reminder_again(
    capsys: pytest.CaptureFixture[str], home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    class ClosedPipe:
        def write(self, text: str) -> int:
            raise BrokenPipeError("stdout is gone")

        def flush(self) -> None:
            raise BrokenPipeError("stdout is gone")

    now = datetime.now(UTC)
    db = Database(home / "lore.db")
    SQLiteReminderStore(db).add("cli:default", "john", "water the plants",
                                now - timedelta(minutes=5), timezone="Asia/Taipei",
                                now=now - timedelta(minutes=10))  # fmt: skip
    db.close()
    with monkeypatch.context() as patch:
        patch.setattr("sys.stdout", ClosedPipe())
        main(["serve", "--once"])
    main(["serve", "--once"])

    assert len(LiveSession(home / "sessions", "cli:default").messages) == 1
    assert [r["status"] for r in listed(capsys, "--all")] == ["delivered"]
