"""exec's sandbox: every way out that a shell offers fails; ordinary commands still work.

Each test runs real commands under the real bubblewrap, against a real home beside (or
inside) the project, with secrets planted where a command could look for them.
"""

from __future__ import annotations

import asyncio
import shutil
import socket
import sqlite3
from pathlib import Path

import pytest

from lore.config import Config
from lore.core.approval import ScriptedApprover
from tests.tooling import call, context, registry, with_tools

pytestmark = pytest.mark.skipif(
    shutil.which("bwrap") is None, reason="bubblewrap is not installed (make test installs it)"
)

TOKEN = "tok-7f3a9c-never-seen"
SECRETS = {
    "MY_OPENAI_KEY": "sk-planted-openai",
    "GH_PAT": "ghp_planted_pat",
    "DATABASE_URL": "postgres://lore:planted-password@db.example/lore",
    "PRIVATE_KEY": "planted-private-key",
    "SLACK_WEBHOOK_URL": "https://hooks.slack.com/services/planted-hook",
    "API_KEY_X": "planted-api-key-x",
    "X_AUTH": "planted-x-auth",
    "AWS_SESSION": "planted-aws-session",
    "LORE_HOME_COPY": "planted-lore-setting",
    "HARMLESS_LOOKING": "planted-harmless",
}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "README.md").write_text("# Garden\n", encoding="utf-8")
    return root


@pytest.fixture
def state(home: Path) -> Path:
    """Lore's home with a token, a database and an archived transcript in it."""
    (home / "sessions" / "archive").mkdir(parents=True)
    (home / "api_token").write_text(TOKEN + "\n")
    (home / "sessions" / "archive" / "old.jsonl").write_text(f'{{"said": "{TOKEN}"}}\n')
    with sqlite3.connect(home / "lore.db") as db:
        db.execute("CREATE TABLE memories (id INTEGER PRIMARY KEY, content TEXT)")
        db.execute("INSERT INTO memories (content) VALUES ('喜欢茶 / любит чай')")
    db.close()
    return home


def _allowed(config: Config, **settings: object) -> Config:
    return with_tools(config, trust={"exec": "allow"}, **settings)


async def _run(config: Config, command: str, root: Path | None) -> str:
    # Commands naming the home, or redirecting, always ask: the owner says yes here, so
    # only the sandbox stands between the command and the file.
    result = await call(
        registry(_allowed(config)),
        "exec",
        {"command": command},
        context(root, approver=ScriptedApprover("y")),
    )
    return result.content


async def test_no_secret_of_the_environment_reaches_a_command(
    config: Config, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("LANG", "C.UTF-8")
    output = await _run(
        config,
        "env; tr '\\0' '\\n' < /proc/self/environ; tr '\\0' '\\n' < /proc/1/environ",
        project,
    )
    for value in SECRETS.values():
        assert value not in output
    assert "planted" not in output
    assert "LANG=C.UTF-8" in output and "PATH=" in output and "HOME=/tmp/home" in output


@pytest.mark.parametrize(
    "command",
    [
        "cat ../lore-home/api_token",
        "cat ../*/api_token",
        "cat ../lore-home/sessions/archive/*.jsonl",
        "cat {home}/api_token",
        "grep -r tok- .. /tmp",
        "python3 -c \"print(open('../lore-home/api_token').read())\"",
        "ln -s ../lore-home linked && cat linked/api_token",
        "ln -s {home}/api_token token && cat token",
        "find / -name api_token -exec cat {{}} +",
    ],
)
async def test_no_path_reaches_lores_home_beside_the_project(
    config: Config, project: Path, state: Path, command: str
) -> None:
    output = await _run(config, command.format(home=state), project)
    assert TOKEN not in output


async def test_sqlite3_cannot_rewrite_lores_database(
    config: Config, project: Path, state: Path
) -> None:
    await _run(
        config,
        "sqlite3 ../lore-home/lore.db \"UPDATE memories SET content = 'owned'\"; "
        f"python3 -c \"import sqlite3; sqlite3.connect('{state}/lore.db')"
        ".execute('DROP TABLE memories')\"",
        project,
    )
    with sqlite3.connect(state / "lore.db") as db:
        assert db.execute("SELECT content FROM memories").fetchall() == [("喜欢茶 / любит чай",)]
    db.close()


async def test_a_home_inside_the_project_is_hidden_and_cannot_be_uncovered(
    config: Config, tmp_path: Path, state: Path
) -> None:
    output = await _run(
        config,
        "ls -a lore-home; cat lore-home/api_token; umount lore-home; cat lore-home/api_token; "
        "touch lore-home/planted; echo done",
        tmp_path,  # the project holds LORE_HOME
    )
    assert TOKEN not in output and "done" in output
    assert not (state / "planted").exists()
    assert (state / "api_token").read_text() == TOKEN + "\n"


async def test_in_the_workspace_the_archive_and_the_home_stay_hidden(
    config: Config, state: Path
) -> None:
    workspace = config.workspace
    (workspace / "memory").mkdir(parents=True)
    (workspace / "memory" / "history.jsonl").write_text(TOKEN + "\n")
    output = await _run(
        config, "cat memory/history.jsonl ../api_token; echo note > notes.md; cat notes.md", None
    )
    assert TOKEN not in output and "note" in output
    assert (workspace / "notes.md").read_text() == "note\n"


async def test_a_skills_scripts_run_from_the_project_but_cannot_be_changed(
    config: Config, project: Path, state: Path
) -> None:
    skill = config.workspace / "skills" / "greet"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: greet\n---\nRun run.sh\n")
    (skill / "run.sh").write_text("echo 你好 from the skill\n")
    output = await _run(
        config,
        f"sh {skill}/run.sh; echo changed >> {skill}/run.sh; cat {state}/api_token",
        project,
    )
    assert "你好 from the skill" in output and TOKEN not in output
    assert (skill / "run.sh").read_text() == "echo 你好 from the skill\n"


async def test_a_folder_of_the_home_outside_the_workspace_is_refused(
    config: Config, state: Path
) -> None:
    output = await _run(config, "ls", state / "sessions")
    assert output.startswith("Error: exec does not run in Lore's home")


async def test_the_network_is_closed_unless_the_command_may_reach_it(
    config: Config, project: Path
) -> None:
    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(b"hello from outside\n")
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    with socket.create_connection(("127.0.0.1", port), 2):
        pass  # reachable outside the sandbox
    probe = (
        "python3 -c \"import socket; s = socket.create_connection(('127.0.0.1', "
        f'{port}), 2); print(s.recv(100).decode())"'
    )
    async with server:
        closed = await _run(config, probe, project)
        opened = await call(
            registry(_allowed(config, exec_network=("python3 -c *",))),
            "exec",
            {"command": probe},
            context(project),
        )
    assert "hello from outside" not in closed and "exit code 1" in closed
    assert "hello from outside" in opened.content


async def test_ordinary_commands_work_in_the_project(config: Config, project: Path) -> None:
    output = await _run(
        config,
        "ls; python3 -c \"print('你好, привет')\"; git init -q && git add README.md && "
        "git status --short; echo written > out.txt",
        project,
    )
    assert "README.md" in output and "你好, привет" in output and "A  README.md" in output
    assert (project / "out.txt").read_text() == "written\n"


async def test_exec_is_off_without_bubblewrap_and_says_how_to_install_it(
    config: Config, project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "bin").mkdir()
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    approver = ScriptedApprover("y")
    result = await call(
        registry(_allowed(config)),
        "exec",
        {"command": "echo hi"},
        context(project, approver=approver),
    )
    assert result.is_error
    assert "exec is off" in result.content and "apt-get install bubblewrap" in result.content
    assert approver.actions == []


async def test_the_owner_may_turn_the_sandbox_off(
    config: Config, project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "bin").mkdir()
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    monkeypatch.setenv("GH_PAT", "ghp_planted_pat")
    result = await call(
        registry(_allowed(config, exec_sandbox=False)),
        "exec",
        {"command": "echo unsandboxed; /usr/bin/cat /proc/self/environ"},
        context(project),
    )
    assert "unsandboxed" in result.content and "ghp_planted_pat" not in result.content
