"""`lore tasks add|list|cancel`, run in-process, and a home from before tasks existed."""

from __future__ import annotations

import json
import re
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from lore.backends.local.database import Database
from lore.backends.local.reminders import SQLiteReminderStore
from lore.backends.local.tasks import SQLiteTaskStore
from lore.cli import main


@pytest.fixture(autouse=True)
def _taipei(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LORE_TIMEZONE", "Asia/Taipei")
    monkeypatch.setenv("LORE_USER", "john")


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_add_states_the_first_run_and_list_shows_the_task(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = run(
        capsys, "tasks", "add", "看看天气，告诉我要不要带伞", "--every", "weekdays 08:00"
    )
    assert (code, err) == (0, "")
    assert re.fullmatch(
        r"Task #1 scheduled for \w{3} \d{4}-\d\d-\d\d 08:00 \(Asia/Taipei\), in .+, then "
        r"repeating weekly mon,tue,wed,thu,fri 08:00\.\n",
        out,
    )
    code, out, _ = run(capsys, "tasks", "list")
    assert code == 0 and "— 看看天气，告诉我要不要带伞 [repeats weekly" in out
    code, out, _ = run(capsys, "tasks", "list", "--json")
    [task] = json.loads(out)
    assert (task["trust"], task["max_rounds"], task["last_status"]) == ("owner", 4, None)


def test_a_tasks_budget_is_set_per_task_and_checked(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        capsys, "tasks", "add", "проверь почту", "--when", "in 1 hour", "--rounds", "2",
        "--seconds", "30", "--json",
    )  # fmt: skip
    assert code == 0 and (json.loads(out)["max_rounds"], json.loads(out)["max_seconds"]) == (2, 30)
    code, _, err = run(capsys, "tasks", "add", "x", "--when", "in 1 hour", "--rounds", "99")
    assert code == 1 and err == "lore: a task's tool rounds must be between 1 and 20\n"


def test_bad_input_is_one_line_and_changes_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "tasks", "add", "x", "--when", "when pigs fly")
    assert (
        code == 1 and err.startswith("lore: could not understand the time") and err.count("\n") == 1
    )
    code, _, err = run(capsys, "tasks", "cancel", "seven")
    assert (code, err) == (1, "lore: 'seven' is not a task number; see `lore tasks list`\n")
    code, _, err = run(capsys, "tasks", "cancel", "7")
    assert (code, err) == (1, "lore: no task #7 in this conversation\n")
    code, out, _ = run(capsys, "tasks", "list", "--all", "--everywhere")
    assert out == "No pending tasks in any conversation.\n"


def test_cancel_takes_the_task_out_of_the_list(capsys: pytest.CaptureFixture[str]) -> None:
    run(capsys, "tasks", "add", "water the plants", "--when", "tomorrow 9am")
    code, out, _ = run(capsys, "tasks", "cancel", "#1")
    assert (code, out) == (0, "Cancelled task #1: water the plants\n")
    code, out, _ = run(capsys, "tasks", "list")
    assert out == "No pending tasks in cli:default.\n"
    code, out, _ = run(capsys, "tasks", "list", "--all")
    assert "(cancelled)" in out


def test_a_home_from_before_tasks_gains_them_and_keeps_its_reminders(home: Path) -> None:
    path = home / "lore.db"
    now = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
    db = Database(path)
    SQLiteReminderStore(db).add("cli:default", "john", "pills", now + timedelta(hours=1),
                                timezone="UTC", now=now)  # fmt: skip
    db.close()
    with sqlite3.connect(path) as old:  # as the version before tasks left it
        old.execute("DROP TABLE task_runs")
        old.execute("DROP TABLE tasks")
        old.execute("PRAGMA user_version = 9")
    db = Database(path)
    assert [r.text for r in SQLiteReminderStore(db).list("cli:default")] == ["pills"]
    task = SQLiteTaskStore(db).add("cli:default", "john", "x", now, timezone="UTC", now=now)
    assert task.id == 1
    db.close()
