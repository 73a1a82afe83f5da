"""`lore ARGS...` run in this process, as a script would see it run as a command.

`lore.cli.main` gets the arguments as the interpreter would give them (bytes decoded as
`sys.argv` is, undecodable ones as lone surrogates), an environment holding only what the
caller gives (every OPENAI*, ANTHROPIC* and LORE* variable of the test's own removed), a
piped stdin of the given bytes, and stdout and stderr that encode as the interpreter's do.
What it prints, and its exit status, come back as `subprocess.run` gives them; an
exception that escapes `main` is a traceback on stderr and status 1, as for the command.

A test whose point is the process itself (killed, signalled, a terminal, start-up
imports) runs `python -m lore` for real; this one is for what a command prints and does.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
import traceback
from collections.abc import Mapping

import pytest

from lore.cli import main

__all__ = ["lore_bytes", "lore_text"]

_CLEARED = ("OPENAI", "ANTHROPIC", "LORE")


def lore_bytes(
    *args: str | bytes, env: Mapping[str, str], stdin: bytes = b""
) -> subprocess.CompletedProcess[bytes]:
    """Run `lore *args`; stdout and stderr as bytes."""
    argv = [os.fsdecode(arg) for arg in args]
    out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors="strict", newline="\n")
    err = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors="backslashreplace")
    piped = io.TextIOWrapper(io.BytesIO(stdin), encoding="utf-8", errors="strict")
    with pytest.MonkeyPatch.context() as patch:
        for name in [name for name in os.environ if name.startswith(_CLEARED)]:
            patch.delenv(name)
        for name, value in env.items():
            patch.setenv(name, value)
        patch.setattr(sys, "stdin", piped)
        patch.setattr(sys, "stdout", out)
        patch.setattr(sys, "stderr", err)
        try:
            code = _status(main(argv))
        except SystemExit as exc:
            code = _status(exc.code, err)
        except BaseException:  # what the interpreter does with an uncaught exception
            traceback.print_exc(file=err)
            code = 1
        finally:
            out.flush()
            err.flush()
    printed, complained = out.buffer, err.buffer
    assert isinstance(printed, io.BytesIO) and isinstance(complained, io.BytesIO)
    return subprocess.CompletedProcess(
        ["lore", *argv], code, printed.getvalue(), complained.getvalue()
    )


def lore_text(
    *args: str | bytes, env: Mapping[str, str], stdin: bytes = b""
) -> subprocess.CompletedProcess[str]:
    """Run `lore *args`; stdout and stderr as text."""
    done = lore_bytes(*args, env=env, stdin=stdin)
    return subprocess.CompletedProcess(
        done.args, done.returncode, done.stdout.decode(), done.stderr.decode()
    )


def _status(code: object, err: io.TextIOWrapper | None = None) -> int:
    """The exit status `sys.exit(code)` gives: None is 0, a message is printed and 1."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=err)
    return 1
