"""A throwaway PostgreSQL server in a temporary directory on a free port, for tests that
restart their database (never the shared one on 5432). PostgreSQL refuses to run as root:
as root the server commands run as the `postgres` user."""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import subprocess
import tempfile
from pathlib import Path

from tests.faults.switch import free_port


def postgres_bin() -> Path | None:
    """The newest installed server's bin directory with initdb and pg_ctl, if any."""
    for found in sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True):
        if all((Path(found) / tool).exists() for tool in ("initdb", "pg_ctl")):
            return Path(found)
    on_path = shutil.which("initdb")
    return Path(on_path).parent if on_path and shutil.which("pg_ctl") else None


class ThrowawayPostgres:
    def __init__(self, bin_dir: Path) -> None:
        self.bin = bin_dir
        self.port = free_port()
        self.root = Path(tempfile.mkdtemp(prefix="gpuposture-pg-"))
        self.data = self.root / "data"
        self.log = self.root / "server.log"
        self._as: list[str] = []
        if os.geteuid() == 0:
            self._as = ["runuser", "-u", "postgres", "--"]
            owner = pwd.getpwnam("postgres")
            os.chown(self.root, owner.pw_uid, owner.pw_gid)

    def url(self, database: str) -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/{database}"

    def _run(self, tool: str, *args: str, timeout: float = 60) -> None:
        command = [*self._as, str(self.bin / tool), *args]
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
        if done.returncode != 0:
            log = self.log.read_text() if self.log.exists() else ""
            raise RuntimeError(f"{tool} failed: {done.stdout}{done.stderr}\n{log}")

    def start(self) -> ThrowawayPostgres:
        self._run(
            "initdb",
            "-D",
            str(self.data),
            "-U",
            "postgres",
            "--auth=trust",
            "-E",
            "UTF8",
            "--no-sync",
        )
        options = (
            f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off "
            "-c full_page_writes=off"
        )
        self._run(
            "pg_ctl",
            "-D",
            str(self.data),
            "-l",
            str(self.log),
            "-o",
            options,
            "-w",
            "-t",
            "60",
            "start",
        )
        return self

    def restart(self) -> None:
        """A fast restart: sessions are cut, the server comes back on the same port."""
        self._run(
            "pg_ctl",
            "-D",
            str(self.data),
            "-l",
            str(self.log),
            "-m",
            "fast",
            "-w",
            "-t",
            "60",
            "restart",
        )

    def stop(self) -> None:
        if (self.data / "postmaster.pid").exists():
            # Best effort: the directory goes either way.
            with contextlib.suppress(RuntimeError, subprocess.TimeoutExpired):
                self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop")
        shutil.rmtree(self.root, ignore_errors=True)

    def create_database(self, name: str) -> None:
        import psycopg

        with psycopg.connect(self.url("postgres"), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
