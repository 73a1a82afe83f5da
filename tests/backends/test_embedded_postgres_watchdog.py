"""A test run killed with SIGKILL leaves no PostgreSQL behind: the embedded server's
watchdog stops it and deletes its directory once the process that started it is gone."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

_STARTER = """
import json, sys, time
sys.path.insert(0, {root!r})
from tests.postgres_server import EmbeddedPostgres, PostgresUnavailable
try:
    server = EmbeddedPostgres().start()
except PostgresUnavailable as exc:
    print(json.dumps({{"unavailable": str(exc)}}), flush=True)
    sys.exit(0)
print(json.dumps({{"port": server.port, "root": str(server.root)}}), flush=True)
time.sleep(600)
"""


def _listening(port: int) -> bool:
    with socket.socket() as probe:
        probe.settimeout(1)
        return probe.connect_ex(("127.0.0.1", port)) == 0


@pytest.mark.postgres
def test_the_server_stops_when_the_process_that_started_it_is_killed() -> None:
    root = str(Path(__file__).resolve().parents[2])
    starter = subprocess.Popen(
        [sys.executable, "-c", _STARTER.format(root=root)], stdout=subprocess.PIPE, text=True
    )
    assert starter.stdout is not None
    started = json.loads(starter.stdout.readline())
    if "unavailable" in started:
        starter.wait(30)
        pytest.skip(f"PostgreSQL cannot start here: {started['unavailable']}")
    port, data = int(started["port"]), Path(started["root"])
    assert _listening(port) and data.exists()
    os.kill(starter.pid, signal.SIGKILL)
    starter.wait(30)
    deadline = time.monotonic() + 60
    while (_listening(port) or data.exists()) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _listening(port), "the server kept running after its starter was killed"
    assert not data.exists(), "the server's directory was left behind"
