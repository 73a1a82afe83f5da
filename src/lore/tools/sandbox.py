"""The sandbox `exec` runs commands in: bubblewrap's command line and the environment.

The command sees a new, empty root holding only the system read-only (/usr and its
links, a few files of /etc), a fresh /proc of its own processes, a private /dev and /tmp,
the project folder writable and the workspace's skills readable. Lore's home and every
other file of the owner are not there at all. Where the project holds the home, an empty
folder is mounted over the home; where the project is the agent workspace, over its
archive and version history. No capability survives (`--cap-drop ALL`), so even root
inside cannot unmount what hides them. The network is a private loopback unless the
trust policy lets that command out. The environment is built from an allowlist of
harmless names, so a secret is never passed whatever it is called; bubblewrap itself
starts with it too, because it becomes process 1 and its environment shows in
/proc/1/environ.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from pathlib import Path

__all__ = [
    "BWRAP_MISSING",
    "SANDBOX_HOME",
    "bwrap_command",
    "find_bwrap",
    "minimal_environment",
]

BWRAP_MISSING = (
    "exec is off: its sandbox needs bubblewrap, which is not installed "
    "(install it with `sudo apt-get install bubblewrap`, or set tools.exec_sandbox = false "
    "in config.toml to run commands without a sandbox)"
)
SANDBOX_HOME = "/tmp/home"  # HOME inside the sandbox: empty, and gone when the command ends

_PASSED = frozenset({"PATH", "LANG", "LANGUAGE", "TERM", "TZ", "COLORTERM", "NO_COLOR"})
_SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
# What programs need from /etc; never the whole of it (shadow, ssh keys, …).
_ETC = (
    "passwd",
    "group",
    "hosts",
    "hostname",
    "resolv.conf",
    "nsswitch.conf",
    "host.conf",
    "services",
    "protocols",
    "localtime",
    "timezone",
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "alternatives",
    "ssl",
    "ca-certificates",
    "mime.types",
    "gitconfig",
    "os-release",
    "locale.alias",
    "terminfo",
)


def find_bwrap(env: Mapping[str, str]) -> str | None:
    return shutil.which("bwrap", path=env.get("PATH") or os.defpath)


def minimal_environment(env: Mapping[str, str], *, home: str) -> dict[str, str]:
    """The few settings a command may inherit (search path, language, terminal, time
    zone), with `home` as HOME; every other name is dropped, however innocent it looks."""
    kept = {
        name: value
        for name, value in env.items()
        if name in _PASSED or (name.startswith("LC_") and name[3:].isupper())
    }
    kept.setdefault("PATH", os.defpath)
    kept["HOME"] = home
    kept["TMPDIR"] = "/tmp"
    return kept


def bwrap_command(
    bwrap: str,
    command: str,
    *,
    root: Path,
    home: Path,
    hidden_in_root: list[Path],
    read_only: list[Path],
    network: bool,
) -> list[str]:
    """bubblewrap's argument list running `/bin/sh -c command` in `root`. `hidden_in_root`
    are folders below `root` that get an empty folder mounted over them; `read_only` are
    folders elsewhere the command may read (the skills' scripts)."""
    args = [bwrap, "--die-with-parent", "--new-session", "--cap-drop", "ALL"]
    args += ["--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try"]
    if not network:
        args.append("--unshare-net")
    for path in _SYSTEM:
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
    for name in _ETC:
        args += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
    args += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "--dir", SANDBOX_HOME]
    if any(home == Path(path) or Path(path) in home.parents for path in _SYSTEM):
        args += ["--tmpfs", str(home)]
    args += ["--bind", str(root), str(root)]
    for folder in hidden_in_root:
        args += ["--tmpfs", str(folder)]
    for folder in read_only:
        args += ["--ro-bind", str(folder), str(folder)]
    args += ["--chdir", str(root), "/bin/sh", "-c", command]
    return args
