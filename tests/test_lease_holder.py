"""A process's proof of life: a holder whose process ended, however it ended, is known as
gone to the other processes of its home; one that lives, or that this home cannot see, is
not."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lore.lease_holder import LeaseHolder

_CHILD = (
    "import sys, time\n"
    "from pathlib import Path\n"
    "from lore.lease_holder import LeaseHolder\n"
    "holder = LeaseHolder(Path(sys.argv[1]))\n"
    "if sys.argv[2] == 'close':\n"
    "    holder.close()\n"
    "print(holder.name, flush=True)\n"
    "time.sleep(600)\n"
)


@pytest.fixture
def holders(tmp_path: Path) -> Path:
    return tmp_path / "home" / ".holders"


def _child(directory: Path, how: str = "hold") -> tuple[subprocess.Popen[str], str]:
    child = subprocess.Popen(
        [sys.executable, "-c", _CHILD, str(directory), how], stdout=subprocess.PIPE, text=True
    )
    assert child.stdout is not None
    return child, child.stdout.readline().strip()


def test_a_process_killed_with_sigkill_is_gone_and_one_that_lives_is_not(holders: Path) -> None:
    here = LeaseHolder(holders)
    living, alive = _child(holders)
    doomed, dead = _child(holders)
    try:
        assert here.gone() == []
        os.kill(doomed.pid, signal.SIGKILL)
        doomed.wait()
        assert here.gone() == [dead]
        assert here.gone() == [dead]  # still known as gone on the next look
        assert alive not in here.gone()
    finally:
        living.kill()
        living.wait()
    assert sorted(here.gone()) == sorted([alive, dead])
    here.close()


def test_a_holder_that_stops_cleanly_is_gone_at_once(holders: Path) -> None:
    here = LeaseHolder(holders)
    child, name = _child(holders, "close")
    try:
        assert here.gone() == [name]  # the process still runs, but holds nothing now
    finally:
        child.kill()
        child.wait()
    other = LeaseHolder(holders)
    other.close()
    assert other.name in here.gone()
    assert here.name not in here.gone()


def test_a_holder_of_another_home_is_never_seen(holders: Path) -> None:
    here = LeaseHolder(holders / "a")
    elsewhere = LeaseHolder(holders / "b")
    elsewhere.close()
    assert here.gone() == []


def test_a_gone_mark_is_removed_once_every_lease_has_run_out_anyway(holders: Path) -> None:
    here = LeaseHolder(holders)
    old, recent = LeaseHolder(holders), LeaseHolder(holders)
    old.close()
    recent.close()
    hours_ago = time.time() - 2 * 3600
    os.utime(holders / f"{old.name}.gone", (hours_ago, hours_ago))
    (holders / "c0ffee.tmp").touch()  # a process that died while starting
    os.utime(holders / "c0ffee.tmp", (hours_ago, hours_ago))
    assert here.gone() == [recent.name]
    assert sorted(p.name for p in holders.iterdir()) == sorted(
        [f"{here.name}.holder", f"{recent.name}.gone"]
    )
