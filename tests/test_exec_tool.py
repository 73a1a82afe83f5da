"""exec: runs in the project, stops at the timeout, cuts long output, keeps secrets out."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from lore.config import Config
from lore.core.approval import ScriptedApprover
from tests.tooling import call, context, registry, with_tools


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    return root


def _allowed(config: Config, **settings: object) -> Config:
    return with_tools(config, trust={"exec": "allow"}, **settings)


async def test_exec_runs_in_the_project_and_reports_the_exit_code(
    config: Config, project: Path
) -> None:
    result = await call(
        registry(_allowed(config)), "exec", {"command": "pwd; exit 3"}, context(project)
    )
    lines = result.content.splitlines()
    assert lines[0] == "$ pwd; exit 3"
    assert lines[1].startswith("exit code 3 · ")
    assert lines[2] == str(project)


async def test_exec_is_stopped_at_the_timeout_with_everything_it_started(
    config: Config, project: Path
) -> None:
    quick = _allowed(config, exec_timeout=0.5)
    started = time.monotonic()
    result = await call(
        registry(quick),
        "exec",
        {"command": "echo begun; sleep 30.4242 & echo $! > child.pid; wait"},
        context(project, approver=ScriptedApprover("y")),  # a redirection always asks
    )
    assert time.monotonic() - started < 10
    assert result.is_error
    assert result.content.startswith(
        "Error: `echo begun; sleep 30.4242 & echo $! > child.pid; wait` was stopped after 0.5 s"
    )
    assert "begun" in result.content
    # The pid the command saw is its sandbox's own; look for the child by its command line.
    for _ in range(100):
        if not _running("30.4242"):
            break
        await asyncio.sleep(0.02)
    else:
        pytest.fail("the command's background child outlived the timeout")


async def test_exec_output_is_cut_at_the_cap(config: Config, project: Path) -> None:
    capped = _allowed(config, output_cap=1000)
    result = await call(registry(capped), "exec", {"command": "seq 1 100000"}, context(project))
    assert not result.is_error
    assert result.content.endswith("… [output cut at 1000 characters]")
    assert len(result.content) < 1200


async def test_exec_environment_has_no_keys_tokens_or_lore_settings(
    config: Config, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in (
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "GITHUB_TOKEN",
        "MY_SECRET_THING",
        "LORE_HOME",
        "DB_PASSWORD",
    ):
        monkeypatch.setenv(name, "leak-me")
    monkeypatch.setenv("TZ", "Asia/Taipei")
    result = await call(registry(_allowed(config)), "exec", {"command": "env"}, context(project))
    assert "leak-me" not in result.content
    assert "TZ=Asia/Taipei" in result.content and "PATH=" in result.content


async def test_exec_asks_by_default_and_shows_the_command_line(
    config: Config, project: Path
) -> None:
    approver = ScriptedApprover("y")
    result = await call(
        registry(config), "exec", {"command": "echo 你好"}, context(project, approver=approver)
    )
    assert "你好" in result.content
    (action,) = approver.actions
    assert action.summary == "run `echo 你好`"
    assert action.detail == f"cd {project}\necho 你好\n"
    assert result.decision == {"trust": "ask", "outcome": "approved", "by": "tester"}


def _running(marker: str) -> bool:
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and marker in (entry / "cmdline").read_text():
                return True
        except OSError:
            continue
    return False
