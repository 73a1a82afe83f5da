"""`lore service install|uninstall|status|logs`: the systemd user unit and the launchd
plist as written, and the commands run against a recording `systemctl` on PATH (a real
script, run as a real subprocess)."""

from __future__ import annotations

import json
import plistlib
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from lore.cli import main
from lore.service_units import (
    Service,
    environment_file,
    launchd_plist,
    lore_command,
    systemd_unit,
)


def _fake_tool(bin_dir: Path, name: str, body: str = "") -> Path:
    """`name` on PATH: records each call's arguments, one line each, then runs `body`."""
    bin_dir.mkdir(exist_ok=True)
    calls = bin_dir / f"{name}.calls"
    script = bin_dir / name
    script.write_text(f'#!/bin/sh\necho "$*" >> "{calls}"\n{body}\n', encoding="utf-8")
    script.chmod(0o755)
    return calls


def _calls(calls: Path) -> list[str]:
    return calls.read_text(encoding="utf-8").splitlines() if calls.exists() else []


@pytest.fixture
def bin_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A PATH of our own: only the tools a test puts there (and sh, for them)."""
    path = tmp_path / "bin"
    path.mkdir()
    (path / "sh").symlink_to(shutil.which("sh") or "/bin/sh")
    monkeypatch.setenv("PATH", str(path))
    return path


def _unit(tmp_path: Path) -> Path:
    return tmp_path / "fake-home" / ".config" / "systemd" / "user" / "lore.service"


def _field(unit: str, key: str) -> list[str]:
    return [line.partition("=")[2] for line in unit.splitlines() if line.startswith(key + "=")]


def test_the_unit_runs_this_lore_restarts_it_on_failure_and_stops_it_with_sigterm(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    unit = systemd_unit(Service(lore_command(), home, env_file=home / "service.env"))
    assert _field(unit, "ExecStart") == [f"{Path(sys.executable).parent / 'lore'} serve"]
    assert _field(unit, "Environment") == [f"LORE_HOME={home}", "PYTHONUNBUFFERED=1"]
    assert _field(unit, "EnvironmentFile") == [str(home / "service.env")]
    assert _field(unit, "Restart") == ["on-failure"] and _field(unit, "RestartSec") == ["5"]
    assert _field(unit, "KillSignal") == ["SIGTERM"] and _field(unit, "TimeoutStopSec") == ["150"]
    assert _field(unit, "ExecReload") == ["/bin/kill -HUP $MAINPID"]
    assert _field(unit, "WantedBy") == ["default.target"]


def test_without_a_lore_script_beside_the_interpreter_the_unit_runs_python_m_lore(
    tmp_path: Path,
) -> None:
    python = tmp_path / "venv" / "bin" / "python3"
    python.parent.mkdir(parents=True)
    python.touch()
    assert lore_command(str(python)) == (str(python), "-m", "lore")
    (python.parent / "lore").touch()
    assert lore_command(str(python)) == (str(python.parent / "lore"),)


@pytest.mark.skipif(
    shutil.which("systemd-analyze") is None, reason="systemd-analyze is not installed here"
)
@pytest.mark.parametrize("name", ["home", "my lore 100%"], ids=["plain", "space-and-percent"])
def test_systemd_analyze_verify_accepts_the_unit(tmp_path: Path, name: str) -> None:
    home = tmp_path / name
    home.mkdir()
    (home / "service.env").write_text(environment_file({"LORE_MODEL": "scripted"}))
    path = tmp_path / "lore.service"
    path.write_text(systemd_unit(Service(lore_command(), home, env_file=home / "service.env")))
    checked = subprocess.run(
        ["systemd-analyze", "verify", str(path)], capture_output=True, text=True, check=False
    )
    assert checked.returncode == 0, checked.stderr
    assert "lore.service" not in checked.stdout + checked.stderr  # no warning about it


@pytest.mark.skipif(
    shutil.which("systemd-analyze") is None, reason="systemd-analyze is not installed here"
)
def test_systemd_analyze_verify_would_catch_a_unit_that_cannot_start(tmp_path: Path) -> None:
    path = tmp_path / "lore.service"
    path.write_text(systemd_unit(Service(("/nonexistent/lore",), tmp_path)))
    checked = subprocess.run(
        ["systemd-analyze", "verify", str(path)], capture_output=True, text=True, check=False
    )
    assert checked.returncode != 0 and "/nonexistent/lore" in checked.stderr


def test_the_environment_file_quotes_what_systemd_would_read_otherwise() -> None:
    text = environment_file({"OPENAI_API_KEY": 'sk-"a"$b\\c'})
    assert text.splitlines()[1] == 'OPENAI_API_KEY="sk-\\"a\\"\\$b\\\\c"'
    with pytest.raises(ValueError, match="line break"):
        environment_file({"LORE_MODEL": "a\nb"})


def test_the_launchd_plist_keeps_lore_serve_alive_and_logs_under_the_home(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    data = launchd_plist(Service(("/opt/lore/bin/lore",), home, environment={"LORE_MODEL": "x"}))
    plist = plistlib.loads(data)
    assert plist["Label"] == "lore.serve"
    assert plist["ProgramArguments"] == ["/opt/lore/bin/lore", "serve"]
    assert plist["EnvironmentVariables"] == {"LORE_HOME": str(home), "LORE_MODEL": "x"}
    assert plist["KeepAlive"] == {"SuccessfulExit": False} and plist["RunAtLoad"] is True
    assert plist["StandardOutPath"] == plist["StandardErrorPath"] == str(home / "serve.log")
    assert plist["ExitTimeOut"] == 150


def test_install_writes_the_unit_and_the_secret_apart_then_enables_and_restarts_it(
    tmp_path: Path,
    bin_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    calls = _fake_tool(bin_dir, "systemctl")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret-1234")
    monkeypatch.setenv("LORE_MODEL", "openai/gpt-4o-mini")
    assert main(["service", "install", "--env", "OPENAI_API_KEY"]) == 0
    out = capsys.readouterr().out
    unit = _unit(tmp_path).read_text(encoding="utf-8")
    home = tmp_path / "lore-home"
    assert "sk-secret-1234" not in unit
    assert _field(unit, "EnvironmentFile") == [str(home / "service.env")]
    env_file = home / "service.env"
    assert stat.S_IMODE(env_file.stat().st_mode) == 0o600
    assert 'OPENAI_API_KEY="sk-secret-1234"' in env_file.read_text(encoding="utf-8")
    assert _calls(calls) == [
        "--user daemon-reload",
        "--user enable lore.service",
        "--user restart lore.service",
    ]
    assert "set here but not passed: LORE_MODEL" in out
    assert "OPENAI_API_KEY written to" in out and "the unit holds no value" in out
    assert "loginctl enable-linger $USER" in out
    assert all(line.startswith("lore service: ") for line in out.splitlines())


def test_install_respects_xdg_config_home(
    tmp_path: Path, bin_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    assert main(["service", "install", "--no-start"]) == 0
    assert (tmp_path / "xdg" / "systemd" / "user" / "lore.service").is_file()
    assert not _unit(tmp_path).exists()


def test_without_a_user_bus_the_unit_is_written_and_one_line_says_what_to_run(
    tmp_path: Path, bin_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    calls = _fake_tool(
        bin_dir, "systemctl", 'echo "Failed to connect to bus: No medium found" >&2; exit 1'
    )
    assert main(["service", "install"]) == 0
    out = capsys.readouterr().out
    assert _unit(tmp_path).is_file() and _calls(calls) == ["--user daemon-reload"]
    (line,) = [line for line in out.splitlines() if "user session" in line]
    assert "(Failed to connect to bus: No medium found)" in line
    assert line.endswith(
        "systemctl --user daemon-reload && systemctl --user enable lore && "
        "systemctl --user restart lore"
    )


def test_without_systemctl_the_unit_is_written_and_one_line_says_so(
    tmp_path: Path, bin_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["service", "install", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["started"] is False and report["file"] == str(_unit(tmp_path))
    assert report["next"].startswith("systemctl --user daemon-reload")
    assert report["command"] == [*lore_command(), "serve"] and report["env_file"] is None
    assert _unit(tmp_path).is_file()


def test_no_start_only_writes(tmp_path: Path, bin_dir: Path) -> None:
    calls = _fake_tool(bin_dir, "systemctl")
    assert main(["service", "install", "--no-start"]) == 0
    assert _unit(tmp_path).is_file() and _calls(calls) == []


def test_a_variable_lore_does_not_read_or_that_is_not_set_is_one_line(
    bin_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["service", "install", "--env", "HOME"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("lore: --env HOME: Lore does not read HOME") and err.count("\n") == 1
    assert main(["service", "install", "--env", "ANTHROPIC_API_KEY"]) == 1
    assert "ANTHROPIC_API_KEY is not set here; export it first" in capsys.readouterr().err


def test_uninstall_stops_disables_and_removes_the_unit_and_its_secrets(
    tmp_path: Path,
    bin_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret-1234")
    assert main(["service", "install", "--no-start", "--env", "OPENAI_API_KEY"]) == 0
    calls = _fake_tool(bin_dir, "systemctl")
    capsys.readouterr()
    assert main(["service", "uninstall"]) == 0
    out = capsys.readouterr().out
    assert not _unit(tmp_path).exists() and not (tmp_path / "lore-home" / "service.env").exists()
    assert _calls(calls) == ["--user disable --now lore.service", "--user daemon-reload"]
    assert "stopped, disabled and removed" in out
    assert main(["service", "uninstall"]) == 0
    assert "not installed" in capsys.readouterr().out
    assert len(_calls(calls)) == 2  # nothing of ours left: systemd is not asked again


def test_status_wraps_systemctl_status_and_says_when_nothing_is_installed(
    tmp_path: Path, bin_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["service", "status"]) == 1
    assert capsys.readouterr().err.startswith("lore: the service is not installed (")
    assert main(["service", "status", "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["installed"] is False
    assert main(["service", "install", "--no-start"]) == 0
    show = "ActiveState=active\nSubState=running\nMainPID=4242\nNRestarts=2\n"
    calls = _fake_tool(
        bin_dir, "systemctl", f'case "$*" in *show*) printf "{show}";; *) exit 3;; esac'
    )
    capsys.readouterr()
    assert main(["service", "status", "--json"]) == 0
    state = json.loads(capsys.readouterr().out)
    assert (state["active"], state["pid"], state["restarts"]) == ("active", 4242, 2)
    assert main(["service", "status"]) == 3  # systemctl's own code: stopped
    assert _calls(calls)[-1] == "--user status lore.service --no-pager"


def test_logs_wraps_journalctl(bin_dir: Path) -> None:
    calls = _fake_tool(bin_dir, "journalctl")
    assert main(["service", "logs", "-n", "5", "--json"]) == 0
    assert _calls(calls) == ["--user -u lore.service --no-pager -n 5 -o json"]


def test_installing_again_without_env_drops_the_old_secrets_file(
    tmp_path: Path, bin_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret-1234")
    assert main(["service", "install", "--no-start", "--env", "OPENAI_API_KEY"]) == 0
    assert main(["service", "install", "--no-start"]) == 0
    assert not (tmp_path / "lore-home" / "service.env").exists()
    assert _field(_unit(tmp_path).read_text(encoding="utf-8"), "EnvironmentFile") == []


def test_a_unit_systemd_refuses_to_start_is_one_line_and_a_failing_exit(
    bin_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _fake_tool(
        bin_dir,
        "systemctl",
        'case "$*" in *restart*) echo "Job for lore.service failed." >&2; exit 1;; esac',
    )
    assert main(["service", "install"]) == 1
    err = capsys.readouterr().err
    assert err == (
        "lore: systemctl --user restart lore.service failed: Job for lore.service failed.\n"
    )


def test_on_macos_install_writes_a_private_launch_agent_and_bootstraps_it(
    tmp_path: Path,
    bin_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    import os

    monkeypatch.setattr(sys, "platform", "darwin")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret-1234")
    calls = _fake_tool(bin_dir, "launchctl")
    assert main(["service", "install", "--env", "OPENAI_API_KEY"]) == 0
    out = capsys.readouterr().out
    path = tmp_path / "fake-home" / "Library" / "LaunchAgents" / "lore.serve.plist"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    plist = plistlib.loads(path.read_bytes())
    assert plist["EnvironmentVariables"]["OPENAI_API_KEY"] == "sk-secret-1234"
    assert plist["ProgramArguments"] == [*lore_command(), "serve"]
    assert "OPENAI_API_KEY written into that plist (mode 0600)" in out
    uid = os.getuid()
    assert _calls(calls) == [f"bootout gui/{uid}/lore.serve", f"bootstrap gui/{uid} {path}"]
    assert main(["service", "uninstall"]) == 0
    assert not path.exists() and _calls(calls)[-1] == f"bootout gui/{uid}/lore.serve"
