"""`lore backup` / `lore restore`: one verified archive of the whole home, restored only
after every file checks out, never over a home that holds something."""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
from pathlib import Path

import pytest

from lore.backends.local.workspace_git import WorkspaceGit
from lore.cli import main
from lore.config import Config, load_config
from lore.llm.scripted import ScriptedProvider
from lore.runtime import build
from lore.sessions.closing import close_session


@pytest.fixture(autouse=True)
def _user(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LORE_USER", "anna")


def _fill(config: Config) -> None:
    config.home.mkdir(parents=True, exist_ok=True)
    (config.home / "config.toml").write_text('timezone = "Asia/Taipei"\n')
    lore = build(config, provider=ScriptedProvider())
    lore.memory.remember(
        "cli:default", "Анна живёт в Хуаляне", author="anna", via="cli", now=lore.clock.now()
    )
    lore.memory.remember(
        "telegram:7", "安娜喜欢乌龙茶", author="anna", via="cli", now=lore.clock.now()
    )
    lore.session("cli:default").append(
        [{"role": "user", "content": "我们周六去花莲"}, {"role": "assistant", "content": "好"}]
    )
    close_session(lore, "cli:default")
    lore.session("cli:default").append([{"role": "user", "content": "Ещё одно сообщение"}])
    config.workspace.mkdir(parents=True, exist_ok=True)
    (config.workspace / "USER.md").write_text("# User\n\nAnna, Hualien.\n", encoding="utf-8")
    WorkspaceGit(config.workspace).commit(["USER.md"], "dream: who Anna is")
    lore.db.close()


def _files(home: Path) -> dict[str, bytes]:
    return {
        p.relative_to(home).as_posix(): p.read_bytes()
        for p in sorted(home.rglob("*"))
        if p.is_file()
        and p.name != "lore.db"
        and not p.name.startswith(("lore.db-", "lore.log"))
        and not p.name.endswith(".lock")
        and "/.git/" not in f"/{p.relative_to(home)}"
    }


def _memories(home: Path, capsys: pytest.CaptureFixture[str], scope: str) -> list[str]:
    assert main(["memory", "list", "--json", "--home", str(home), "--session", scope]) == 0
    return [m["content"] for m in json.loads(capsys.readouterr().out)]


def test_backup_then_restore_gives_back_every_memory_session_and_file(
    config: Config, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _fill(config)
    archive = tmp_path / "lore-backup.tar.gz"
    assert main(["backup", str(archive)]) == 0
    assert "verified" in capsys.readouterr().out
    assert archive.stat().st_mode & 0o077 == 0  # config.toml may hold keys
    with tarfile.open(archive) as tar:
        names = tar.getnames()
        manifest = json.loads(_read(tar, "manifest.json"))
    assert names[0] == "manifest.json"
    assert {"lore.db", "config.toml", "workspace/USER.md", "sessions/_sessions.jsonl"} <= set(
        manifest["files"]
    )
    assert any(name.startswith("workspace/.git/") for name in names)

    other = tmp_path / "restored-home"
    assert main(["restore", str(archive), "--home", str(other)]) == 0
    capsys.readouterr()
    assert _files(other) == _files(config.home)
    assert _memories(other, capsys, "cli:default") == ["Анна живёт в Хуаляне"]
    assert _memories(other, capsys, "telegram:7") == ["安娜喜欢乌龙茶"]
    restored = load_config(env={"LORE_HOME": str(other)}, flags={"model": "scripted"})
    assert len(WorkspaceGit(restored.workspace).log(limit=5)) == 1
    assert main(["doctor", "--home", str(other)]) == 0


def test_restore_refuses_a_home_that_is_not_empty_and_force_keeps_it_aside(
    config: Config, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _fill(config)
    archive = tmp_path / "b.tar.gz"
    assert main(["backup", str(archive)]) == 0
    (config.workspace / "USER.md").write_text("changed after the backup\n")
    before = _files(config.home)
    capsys.readouterr()
    assert main(["restore", str(archive)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--force" in err
    assert _files(config.home) == before
    assert main(["restore", str(archive), "--force"]) == 0
    out = capsys.readouterr().out
    kept = [p for p in config.home.parent.iterdir() if ".before-restore-" in p.name]
    assert len(kept) == 1 and str(kept[0]) in out
    assert (kept[0] / "workspace" / "USER.md").read_text() == "changed after the backup\n"
    assert (config.workspace / "USER.md").read_text(
        encoding="utf-8"
    ) == "# User\n\nAnna, Hualien.\n"


def _read(tar: tarfile.TarFile, member: str | tarfile.TarInfo) -> bytes:
    file = tar.extractfile(member)
    assert file is not None, member  # a backup holds regular files only
    return file.read()


def _rewrite(archive: Path, name: str, data: bytes) -> None:
    with tarfile.open(archive) as tar:
        members = [(m, _read(tar, m)) for m in tar.getmembers()]
    with tarfile.open(archive, "w:gz") as tar:
        for info, content in members:
            content = data if info.name == name else content
            info.size = len(content)
            tar.addfile(info, io.BytesIO(content))


@pytest.mark.parametrize("damage", ["changed file", "truncated archive", "extra file"])
def test_a_damaged_backup_is_refused_before_anything_changes(
    config: Config, tmp_path: Path, capsys: pytest.CaptureFixture[str], damage: str
) -> None:
    _fill(config)
    archive = tmp_path / "b.tar.gz"
    assert main(["backup", str(archive)]) == 0
    if damage == "changed file":
        _rewrite(archive, "workspace/USER.md", b"# User\n\nSomeone else.\n")
    elif damage == "truncated archive":
        archive.write_bytes(archive.read_bytes()[: archive.stat().st_size // 2])
    else:
        with tarfile.open(archive) as tar:
            members = [(m, _read(tar, m)) for m in tar.getmembers()]
        with tarfile.open(archive, "w:gz") as tar:
            for info, content in members:
                tar.addfile(info, io.BytesIO(content))
            extra = tarfile.TarInfo("../escape.txt")
            extra.size = 1
            tar.addfile(extra, io.BytesIO(b"x"))
    target = tmp_path / "empty-home"
    capsys.readouterr()
    assert main(["restore", str(archive), "--home", str(target)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("lore: ") and err.count("\n") == 1, err
    assert not target.exists()
    assert not (tmp_path / "escape.txt").exists()


def test_backup_never_overwrites_a_file(
    config: Config, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _fill(config)
    existing = tmp_path / "precious.tar.gz"
    existing.write_bytes(b"keep me")
    assert main(["backup", str(existing)]) == 1
    assert existing.read_bytes() == b"keep me"
    assert hashlib.sha256(existing.read_bytes()).hexdigest()
