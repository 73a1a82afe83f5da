"""Every path a file tool touches stays in the project and out of Lore's own state."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from lore.config import Config
from lore.core.approval import Action, Approval
from lore.errors import ToolError
from lore.tools.confine import Confinement
from tests.tooling import call, context, registry, with_tools


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "README.md").write_text("# Demo\n", encoding="utf-8")
    return root


def _exists(path: str) -> bool:
    return Path(path).exists()


@pytest.fixture
def state(home: Path) -> Path:
    """Lore's home with a database and config in it."""
    home.mkdir(parents=True, exist_ok=True)
    (home / "lore.db").write_text("db rows")
    (home / "config.toml").write_text("x")
    (home / "notes.txt").write_text("x")
    (home / "sessions").mkdir()
    return home


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "secret.txt").write_text("the launch code is 0000\n", encoding="utf-8")
    return folder


@pytest.mark.parametrize("tool", ["read_file", "write_file", "edit_file", "list_dir", "grep"])
async def test_dot_dot_out_of_the_project_is_refused(
    config: Config, project: Path, outside: Path, tool: str
) -> None:
    args = {"path": "../outside/secret.txt", "content": "x", "old_text": "0000", "new_text": "1"}
    if tool == "grep":
        args = {"pattern": "launch", "path": "../outside"}
    result = await call(registry(config), tool, args, context(project))
    assert result.is_error and "outside the project folder" in result.content
    assert (outside / "secret.txt").read_text() == "the launch code is 0000\n"


async def test_dot_dot_that_stays_inside_is_fine(config: Config, project: Path) -> None:
    (project / "docs").mkdir()
    result = await call(
        registry(config), "read_file", {"path": "docs/../README.md"}, context(project)
    )
    assert not result.is_error and "# Demo" in result.content


async def test_absolute_path_outside_is_refused_and_inside_is_fine(
    config: Config, project: Path
) -> None:
    tools = registry(config)
    refused = await call(tools, "read_file", {"path": "/etc/passwd"}, context(project))
    assert refused.is_error and "outside the project folder" in refused.content
    created = await call(
        tools, "write_file", {"path": "/tmp/lore-escape.txt", "content": "x"}, context(project)
    )
    assert created.is_error and not _exists("/tmp/lore-escape.txt")
    inside = await call(tools, "read_file", {"path": str(project / "README.md")}, context(project))
    assert not inside.is_error


async def test_home_tilde_is_not_expanded(config: Config, project: Path) -> None:
    result = await call(registry(config), "read_file", {"path": "~/.ssh/id_rsa"}, context(project))
    assert result.is_error and "'~' is not expanded" in result.content


async def test_symlinks_pointing_out_are_refused(
    config: Config, project: Path, outside: Path
) -> None:
    (project / "linked-dir").symlink_to(outside)
    (project / "linked-file.txt").symlink_to(outside / "secret.txt")
    tools = registry(config)
    ctx = context(project)
    for args in ({"path": "linked-dir/secret.txt"}, {"path": "linked-file.txt"}):
        result = await call(tools, "read_file", args, ctx)
        assert result.is_error and "outside the project folder" in result.content
    wrote = await call(tools, "write_file", {"path": "linked-dir/new.txt", "content": "x"}, ctx)
    assert wrote.is_error and not (outside / "new.txt").exists()
    listed = await call(tools, "list_dir", {"path": "linked-dir"}, ctx)
    assert listed.is_error


async def test_symlink_inside_the_project_is_followed(config: Config, project: Path) -> None:
    (project / "notes").mkdir()
    (project / "notes" / "a.md").write_text("inside\n")
    (project / "alias").symlink_to(project / "notes")
    result = await call(registry(config), "read_file", {"path": "alias/a.md"}, context(project))
    assert not result.is_error and "inside" in result.content


async def test_grep_and_glob_never_follow_a_link_out(
    config: Config, project: Path, outside: Path
) -> None:
    (project / "linked-dir").symlink_to(outside)
    (project / "linked-file.txt").symlink_to(outside / "secret.txt")
    tools = registry(config)
    grep = await call(tools, "grep", {"pattern": "launch code"}, context(project))
    assert not grep.is_error and grep.content.startswith("No match")
    glob = await call(tools, "glob", {"pattern": "**/secret.txt"}, context(project))
    assert glob.content.startswith("No file matches")


def test_a_folder_swapped_for_a_link_after_the_check_is_not_followed(
    project: Path, outside: Path, home: Path
) -> None:
    (project / "docs").mkdir()
    (project / "docs" / "secret.txt").write_text("harmless\n")
    place = Confinement(project, home=home, workspace=home / "workspace")
    located = place.locate("docs/secret.txt")  # checked while docs/ is a real folder
    (project / "docs" / "secret.txt").unlink()
    (project / "docs").rmdir()
    (project / "docs").symlink_to(outside)  # swapped before the open
    with pytest.raises(ToolError, match="changed into a link"):
        place.read_bytes(located, 1000)
    with pytest.raises(ToolError, match="changed into a link"):
        place.write_bytes(located, b"overwritten")
    assert (outside / "secret.txt").read_text() == "the launch code is 0000\n"


def test_a_file_swapped_for_a_link_after_the_check_is_not_followed(
    project: Path, outside: Path, home: Path
) -> None:
    place = Confinement(project, home=home, workspace=home / "workspace")
    located = place.locate("README.md")
    (project / "README.md").unlink()
    (project / "README.md").symlink_to(outside / "secret.txt")
    with pytest.raises(ToolError, match="changed into a link"):
        place.read_bytes(located, 1000)
    with pytest.raises(ToolError, match="changed into a link"):
        place.write_bytes(located, b"overwritten")
    assert (outside / "secret.txt").read_text() == "the launch code is 0000\n"


@pytest.mark.parametrize(
    "path",
    [
        "lore.db",
        "lore.db-wal",
        "config.toml",
        "sessions/cli_default.jsonl",
        "lore.log",
        "input_history",
        "api_token",
        "workspace/memory/history.jsonl",
        "workspace/.git/config",
    ],
)
async def test_lores_own_state_is_out_of_reach_even_when_the_project_is_its_home(
    config: Config, home: Path, path: str
) -> None:
    target = home / path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text("private\n")
    tools = registry(config)
    ctx = context(home)  # the person chose LORE_HOME itself as the project
    read = await call(tools, "read_file", {"path": path}, ctx)
    assert read.is_error and "Lore's own state" in read.content
    wrote = await call(tools, "write_file", {"path": path, "content": "x"}, ctx)
    assert wrote.is_error and target.read_text() == "private\n"
    grep = await call(tools, "grep", {"pattern": "private"}, ctx)
    assert "private" not in grep.content.replace("No match for 'private'.", "")


async def test_listing_lores_home_hides_its_state(config: Config, state: Path) -> None:
    listed = await call(registry(config), "list_dir", {}, context(state))
    assert "notes.txt" in listed.content
    assert "lore.db" not in listed.content and "sessions" not in listed.content
    assert "config.toml" not in listed.content


async def test_a_project_containing_lores_home_cannot_reach_its_state(
    config: Config, tmp_path: Path, state: Path
) -> None:
    result = await call(
        registry(config), "read_file", {"path": "lore-home/lore.db"}, context(tmp_path)
    )
    assert result.is_error and "Lore's own state" in result.content


async def test_from_the_workspace_lores_home_is_outside(config: Config, state: Path) -> None:
    result = await call(registry(config), "read_file", {"path": "../lore.db"}, context(None))
    assert result.is_error and "outside the project folder" in result.content


async def test_a_hard_link_to_the_database_is_refused(
    config: Config, state: Path, project: Path
) -> None:
    os.link(state / "lore.db", project / "innocent.txt")
    tools = registry(config)
    read = await call(tools, "read_file", {"path": "innocent.txt"}, context(project))
    assert read.is_error and "hard link to a file in Lore's home" in read.content
    grep = await call(tools, "grep", {"pattern": "db rows"}, context(project))
    assert grep.content.startswith("No match")


@pytest.mark.parametrize(
    "inside",
    [
        "sessions/archive/2026-11-30-0900-garden--ab12.jsonl",
        "sessions/cli_default.jsonl",
        "workspace/memory/2026-11-30.md",
        "media/photo-notes.txt",
    ],
)
async def test_a_hard_link_to_any_file_under_the_home_is_refused(
    config: Config, state: Path, project: Path, inside: str
) -> None:
    target = state / inside
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text("私密的 транскрипт\n", encoding="utf-8")
    (project / "docs").mkdir()
    os.link(target, project / "docs" / "notes.txt")
    tools = registry(config)
    read = await call(tools, "read_file", {"path": "docs/notes.txt"}, context(project))
    assert read.is_error and "hard link to a file in Lore's home" in read.content
    grep = await call(tools, "grep", {"pattern": "私密"}, context(project))
    assert grep.content.startswith("No match")
    edit = await call(
        tools,
        "edit_file",
        {"path": "docs/notes.txt", "old_text": "私密", "new_text": "x"},
        context(project),
    )
    assert edit.is_error and target.read_text(encoding="utf-8") == "私密的 транскрипт\n"


async def test_a_hard_link_between_files_of_the_project_is_read(
    config: Config, state: Path, project: Path
) -> None:
    os.link(project / "README.md", project / "README-copy.md")
    read = await call(registry(config), "read_file", {"path": "README-copy.md"}, context(project))
    assert not read.is_error and "# Demo" in read.content


class _RemovingApprover:
    """The owner says yes, but the folder is removed while the question is open."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    async def approve(self, action: Action) -> Approval:
        shutil.rmtree(self.folder)
        return Approval(approved=True, by="tester")


async def test_a_folder_that_vanishes_mid_call_is_a_tool_error(
    config: Config, project: Path
) -> None:
    tools = registry(with_tools(config, trust={"exec": "ask", "write_file": "ask"}))
    wrote = await call(
        tools,
        "write_file",
        {"path": "新/заметка.md", "content": "x"},
        context(project, approver=_RemovingApprover(project)),
    )
    assert wrote.is_error and "is gone" in wrote.content
    project.mkdir()  # noqa: ASYNC240
    ran = await call(
        tools, "exec", {"command": "ls"}, context(project, approver=_RemovingApprover(project))
    )
    assert ran.is_error and "no longer exists" in ran.content
