"""A chosen project: its bootstrap files replace the workspace's; Dream leaves it alone."""

from __future__ import annotations

from pathlib import Path

import pytest

from lore.backends.local.history import History
from lore.cli import main
from lore.llm.scripted import ScriptedProvider
from lore.memory.dream import DREAM_PROMPT, run_dream
from lore.messages import content_text
from lore.runtime import Runtime


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "shop"
    root.mkdir()
    (root / "AGENTS.md").write_text("Run `make test` before every commit.\n", encoding="utf-8")
    (root / "SOUL.md").write_text("In this project you are terse.\n", encoding="utf-8")
    (root / "README.md").write_text("# Shop\n", encoding="utf-8")
    return root


def _contents(folder: Path) -> dict[str, str]:
    return {p.name: p.read_text() for p in folder.iterdir()}


@pytest.fixture
def personal(lore: Runtime) -> Runtime:
    root = lore.workspace.root
    (root / "AGENTS.md").write_text("Workspace rule: be chatty.\n", encoding="utf-8")
    (root / "SOUL.md").write_text("Workspace soul: warm and playful.\n", encoding="utf-8")
    (root / "USER.md").write_text("Workspace user: John in Taipei.\n", encoding="utf-8")
    return lore


async def test_project_bootstrap_files_replace_the_workspaces(
    personal: Runtime, model: ScriptedProvider, project: Path
) -> None:
    model.reply("ok")
    await personal.conversation("cli:default", emit=lambda e: None, project=project).send("hi")
    system = model.requests[0].system
    assert "## AGENTS.md\n\nRun `make test` before every commit." in system
    assert "## SOUL.md\n\nIn this project you are terse." in system
    assert "Workspace rule" not in system and "Workspace soul" not in system
    assert "Workspace user" not in system  # no USER.md in the project: none at all
    assert f"You are working in the project folder {project}." in system


async def test_without_a_project_the_workspace_files_apply(
    personal: Runtime, model: ScriptedProvider
) -> None:
    model.reply("ok")
    await personal.conversation("cli:default", emit=lambda e: None).send("hi")
    system = model.requests[0].system
    assert "Workspace soul: warm and playful." in system and "# Project" not in system


async def test_a_project_soul_md_linking_outside_is_not_read(
    personal: Runtime, model: ScriptedProvider, project: Path, tmp_path: Path
) -> None:
    (tmp_path / "private.txt").write_text("my bank PIN\n")
    (project / "SOUL.md").unlink()
    (project / "SOUL.md").symlink_to(tmp_path / "private.txt")
    model.reply("ok")
    await personal.conversation("cli:default", emit=lambda e: None, project=project).send("hi")
    assert "bank PIN" not in model.requests[0].system


async def test_the_session_records_the_project(
    lore: Runtime, model: ScriptedProvider, project: Path
) -> None:
    model.reply("ok")
    await lore.conversation("cli:default", emit=lambda e: None, project=project).send("hi")
    assert lore.session("cli:default").meta.extra["project"] == str(project)


async def test_file_tools_work_in_the_project(
    lore: Runtime, model: ScriptedProvider, project: Path
) -> None:
    model.tool_call("read_file", {"path": "README.md"}).reply("It is a shop.")
    await lore.conversation("cli:default", emit=lambda e: None, project=project).send("read it")
    assert model.requests[1].messages[-1]["content"] == "README.md · lines 1-1 of 1\n# Shop"


async def test_dream_never_edits_project_files(
    lore: Runtime, model: ScriptedProvider, project: Path
) -> None:
    History(lore.workspace.memory_dir).append(
        "cli:default", "In the shop project John decided to use Postgres.", now=lore.clock.now()
    )
    before = _contents(project)
    model.tool_calls(
        [
            ("write_file", {"path": str(project / "AGENTS.md"), "content": "hijacked"}),
            ("write_file", {"path": "../../shop/SOUL.md", "content": "hijacked"}),
            ("edit_file", {"path": "AGENTS.md", "old_text": "x", "new_text": "y"}),
        ]
    )
    model.reply("no changes")
    result = await run_dream(lore)
    assert result.status == "done"
    errors = [
        content_text(m["content"]) for m in model.requests[-1].messages if m["role"] == "tool"
    ]
    assert len(errors) == 3 and all(e.startswith("Error:") for e in errors)
    assert _contents(project) == before


def test_dream_is_told_to_keep_project_facts_out_of_soul_md() -> None:
    assert "Never put facts about a project's code or files into SOUL.md" in DREAM_PROMPT


def test_a_missing_project_folder_is_one_clear_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["chat", "--project", str(tmp_path / "nope"), "-m", "hi"]) == 1
    err = capsys.readouterr().err
    assert err == f"lore: project folder '{tmp_path / 'nope'}' does not exist or is not a folder\n"
