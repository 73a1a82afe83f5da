"""The package as people install it: `python -m build` makes a wheel and an sdist that
`twine check` passes, and the wheel installs into a fresh virtual environment, in a shell
with nothing but HOME and the system's PATH and no checkout anywhere on its path, where
`lore --version`, `lore --help` and a first `lore remind add` run. It installs the
dependencies from the package index, so it runs with the quick start, not in `make check`."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from lore import __version__

pytestmark = pytest.mark.quickstart

ROOT = Path(__file__).resolve().parents[2]


def _fresh_shell(script: str, home: Path) -> subprocess.CompletedProcess[str]:
    """`script` in a login shell with nothing but HOME and the system's PATH; it must pass."""
    done = subprocess.run(
        ["env", "-i", f"HOME={home}", "PATH=/usr/bin:/bin", "bash", "-lc", script],
        capture_output=True,
        text=True,
        timeout=1200,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("package")
    clone = base / "lore"
    subprocess.run(["git", "clone", "--quiet", str(ROOT), str(clone)], check=True)
    out = base / "dist"
    subprocess.run(
        [sys.executable, "-m", "build", "--outdir", str(out), str(clone)],
        check=True,
        capture_output=True,
    )
    return out


def test_build_makes_a_wheel_and_an_sdist_that_twine_passes(dist: Path) -> None:
    names = sorted(p.name for p in dist.iterdir())
    assert names == [
        f"lore_assistant-{__version__}-py3-none-any.whl",
        f"lore_assistant-{__version__}.tar.gz",
    ]
    checked = subprocess.run(
        [sys.executable, "-m", "twine", "check", "--strict", *map(str, dist.iterdir())],
        capture_output=True,
        text=True,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_the_wheel_installs_into_a_fresh_venv_and_lore_runs_without_the_checkout(
    dist: Path, tmp_path: Path
) -> None:
    [wheel] = dist.glob("*.whl")
    home = tmp_path / "home"
    home.mkdir()
    venv = tmp_path / "venv"
    script = (
        f"python3 -m venv {venv} && {venv}/bin/pip install --quiet {wheel} && cd {home} && "
        f"{venv}/bin/lore --version && {venv}/bin/lore --help | head -1 && "
        f"{venv}/bin/python -c 'import lore, sys; print(lore.__file__)' && "
        f"LORE_HOME={home}/lore {venv}/bin/lore remind add 'water the plants' --when 'in 2 hours'"
    )
    done = _fresh_shell(script, home)
    lines = done.stdout.splitlines()
    assert lines[0] == f"lore {__version__}"
    assert lines[1].startswith("usage: lore")
    assert lines[2].startswith(str(venv)) and str(ROOT) not in lines[2]
    assert "Reminder #1 set for" in done.stdout


@pytest.mark.parametrize("tool", ["pipx", "uv"])
def test_the_wheel_installs_as_a_tool_with_pipx_and_uv(
    dist: Path, tmp_path: Path, tool: str
) -> None:
    [wheel] = dist.glob("*.whl")
    home = tmp_path / "home"
    home.mkdir()
    tools = tmp_path / "tools"
    bin_dir = tmp_path / "bin"
    # uv reads the system's certificates (UV_NATIVE_TLS), as pip does, for a proxy's CA.
    install = {
        "pipx": f"PIPX_HOME={tmp_path}/pipx PIPX_BIN_DIR={bin_dir} {tools}/bin/pipx install",
        "uv": f"UV_NATIVE_TLS=1 UV_TOOL_DIR={tmp_path}/uv UV_TOOL_BIN_DIR={bin_dir} "
        f"{tools}/bin/uv tool install",
    }[tool]
    script = (
        f"python3 -m venv {tools} && {tools}/bin/pip install --quiet {tool} && {install} {wheel} "
        f"&& cd {home} && {bin_dir}/lore --version"
    )
    done = _fresh_shell(script, home)
    assert done.stdout.splitlines()[-1] == f"lore {__version__}"
