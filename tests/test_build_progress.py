"""`make chat`'s offline build shows one line of progress, never a compiler command line;
pip's result and error lines come through whole."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

TOOL = Path(__file__).resolve().parents[1] / "tools" / "build_progress.py"


def _filter(log: str) -> str:
    done = subprocess.run(  # bytes: text mode would read each \r as a line break
        [sys.executable, str(TOOL)], input=log.encode(), capture_output=True, check=True
    )
    return done.stdout.decode()


def test_compiler_steps_become_one_line_of_progress() -> None:
    command = "/usr/bin/c++ -O3 " + "-DGGML_USE_X " * 80 + "-c ggml.c"
    log = "".join(f"  [{n:>2}/96] {command}\n" for n in range(1, 4))
    log += "  Successfully installed llama-cpp-python-0.3.2\n"
    shown = _filter(log)
    assert "-DGGML" not in shown
    assert shown.split("\r")[-1] == (
        "  building llama.cpp: step 3 of 96\n  Successfully installed llama-cpp-python-0.3.2\n"
    )
    assert max(len(line) for line in shown.replace("\r", "\n").splitlines()) < 80


def test_an_error_line_is_passed_through_after_the_progress_line() -> None:
    shown = _filter("[1/96] cc -c a.c\nerror: command 'cmake' failed\n")
    assert shown.endswith("step 1 of 96\nerror: command 'cmake' failed\n")


def test_nothing_is_printed_for_a_log_without_steps_or_results() -> None:
    assert _filter("Collecting llama-cpp-python\n  Downloading …\n") == ""
