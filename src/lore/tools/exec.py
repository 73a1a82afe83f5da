"""The exec tool: one shell command in the project folder, in a sandbox, under the trust rules.

The command runs with `/bin/sh -c` under bubblewrap (see `lore.tools.sandbox`): the
system read-only, the project writable, Lore's home and the owner's other files not
there, no network unless the trust policy lets that command out, and an environment
built from an allowlist. Without bubblewrap `exec` is off, unless the owner turned the
sandbox off in config.toml (`tools.exec_sandbox = false`); the environment is the same
allowlist either way. The command gets no input, runs in its own process group, is
stopped with everything it started when it outlives the timeout, and its output (stdout
and stderr together) is cut to the output cap.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from pathlib import Path
from typing import Any

from lore.config import inherited_environment
from lore.core.approval import Action
from lore.core.tools import ToolContext, required_str
from lore.errors import ToolError
from lore.tools.confine import WORKSPACE_STATE
from lore.tools.sandbox import (
    BWRAP_MISSING,
    SANDBOX_HOME,
    bwrap_command,
    find_bwrap,
    minimal_environment,
)
from lore.tools.workbench import Workbench, os_errors_as_tool_errors

__all__ = ["ExecTool"]


class ExecTool:
    name = "exec"
    description = (
        "Run one shell command in the project folder (or the workspace when no project is "
        "chosen) and get its exit code and output (stdout and stderr, cut when long). It "
        "is stopped after a timeout and gets no input, so never start anything "
        "interactive. It runs in a sandbox: the project folder (writable), the system "
        "(read-only) and the skills are there, nothing else of the owner's, and usually no "
        "network. The owner is usually asked first; some commands are never allowed. "
        "A skill's scripts run through this tool too."
    )
    parameters: dict[str, Any] = {
        "type": "object",
        "properties": {"command": {"type": "string", "description": "The shell command line"}},
        "required": ["command"],
    }

    def __init__(self, bench: Workbench) -> None:
        self.bench = bench

    @os_errors_as_tool_errors
    async def run(self, args: dict[str, Any], ctx: ToolContext) -> str:
        command = required_str(args, "command")
        root = self.bench.root(ctx).resolve()  # noqa: ASYNC240 (no I/O worth a thread)
        env = inherited_environment()
        sandboxed = self.bench.settings.exec_sandbox
        bwrap = find_bwrap(env) if sandboxed else None
        if sandboxed and bwrap is None:
            raise ToolError(BWRAP_MISSING)
        hidden = self._hidden_in(root)
        verdict = self.bench.policy.for_command(command)
        action = Action(self.name, f"run `{_one_line(command)}`", f"cd {root}\n{command}\n")
        await self.bench.authorize(ctx, action, verdict)
        if not os.path.isdir(root):  # noqa: ASYNC240 (one stat)
            raise ToolError(f"the folder {root} no longer exists; nothing was run")
        if bwrap is not None:
            argv = bwrap_command(
                bwrap,
                command,
                root=root,
                home=self.bench.home,
                hidden_in_root=hidden,
                read_only=self._skills_outside(root),
                network=self.bench.policy.allows_network(command),
            )
            env = minimal_environment(env, home=SANDBOX_HOME)
        else:
            argv = ["/bin/sh", "-c", command]
            env = minimal_environment(env, home=env.get("HOME", str(root)))
        timeout = self.bench.settings.exec_timeout
        started = time.monotonic()
        output, code, timed_out = await run_command(
            argv, cwd=str(root), env=env, seconds=timeout, cap=self.bench.settings.output_cap
        )
        seconds = time.monotonic() - started
        if timed_out:
            raise ToolError(
                f"`{_one_line(command)}` was stopped after {timeout:g} s (the exec timeout)."
                f" Output so far:\n{output or '(none)'}"
            )
        return f"$ {command}\nexit code {code} · {seconds:.1f} s\n{output or '(no output)'}"

    def _skills_outside(self, root: Path) -> list[Path]:
        """The workspace's skills folder, when the root does not hold it: a skill's
        scripts run through exec, so the sandbox lets them be read (never written)."""
        skills = Path(os.path.realpath(self.bench.workspace / "skills"))
        if skills == root or root in skills.parents or not skills.is_dir():
            return []
        return [skills]

    def _hidden_in(self, root: Path) -> list[Path]:
        """The folders below `root` the sandbox covers: Lore's home when the project holds
        it, the workspace's archive and history when the project is the workspace. A root
        elsewhere in the home is refused: the sandbox could not hide the state beside it."""
        home, workspace = self.bench.home, Path(os.path.realpath(self.bench.workspace))
        if root == home or home in root.parents:
            if root == workspace:
                for name in WORKSPACE_STATE:  # mount points, so nothing can plant them
                    (workspace / name).mkdir(exist_ok=True)
                return [workspace / name for name in WORKSPACE_STATE]
            in_state = any(workspace / name in (root, *root.parents) for name in WORKSPACE_STATE)
            if workspace not in root.parents or in_state:
                raise ToolError(
                    f"exec does not run in Lore's home ({home}) outside the agent workspace; "
                    "choose a project folder outside it"
                )
            return []
        return [home] if root in home.parents else []


async def run_command(
    argv: list[str], *, cwd: str, env: dict[str, str], seconds: float, cap: int
) -> tuple[str, int, bool]:
    """Run `argv`; its output cut to `cap` characters, exit code, and whether it was
    stopped at the timeout (then the exit code is -9)."""
    process = await asyncio.create_subprocess_exec(
        *argv,
        cwd=cwd,
        env=env,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        start_new_session=True,
    )
    kept = bytearray()
    dropped = 0

    async def collect() -> None:
        nonlocal dropped
        assert process.stdout is not None
        while chunk := await process.stdout.read(1 << 16):
            room = cap * 4 - len(kept)  # characters are at most 4 bytes of UTF-8
            kept.extend(chunk[: max(room, 0)])
            dropped += max(len(chunk) - max(room, 0), 0)
        await process.wait()

    timed_out = False
    try:
        await asyncio.wait_for(collect(), seconds)
    except TimeoutError:
        timed_out = True
    finally:
        if process.returncode is None or timed_out:
            _kill_group(process.pid)
            await process.wait()
    text = kept.decode("utf-8", errors="replace")
    if len(text) > cap or dropped:
        text = text[:cap] + f"\n… [output cut at {cap} characters]"
    return text, -9 if timed_out else (process.returncode or 0), timed_out


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _one_line(command: str, limit: int = 120) -> str:
    flat = " ".join(command.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
