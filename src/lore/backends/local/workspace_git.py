"""Versions of the curated files: the workspace as its own git repository.

Created on first use, unless the workspace already lies inside another repository (then
Dream runs unversioned rather than commit into someone else's history). Only the paths
passed in are ever staged. git runs as a subprocess with its identity, signing and hooks
fixed on the command line, so it works without any global git configuration.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

from lore.ports.notes import Commit, GitError

__all__ = ["WorkspaceGit"]

log = logging.getLogger(__name__)

_IDENTITY = (
    "-c",
    "user.name=Lore",
    "-c",
    "user.email=lore@localhost",
    "-c",
    "commit.gpgsign=false",
    "-c",
    "core.hooksPath=/dev/null",
    "-c",
    "core.quotepath=false",
)
_SHA = re.compile(r"^[0-9a-fA-F]{4,40}$")
_SEP = "\x1f"


class WorkspaceGit:
    def __init__(self, root: Path) -> None:
        self.root = root
        self._ready: bool | None = None

    # -- setup -------------------------------------------------------------------

    def ensure(self) -> bool:
        """True when the workspace is (now) its own repository; False when it cannot be."""
        if self._ready is not None:
            return self._ready
        self._ready = self._prepare()
        return self._ready

    def _prepare(self) -> bool:
        if shutil.which("git") is None:
            log.info("git not found: Dream runs without versions")
            return False
        self.root.mkdir(parents=True, exist_ok=True)
        top = self._run("rev-parse", "--show-toplevel", check=False)
        if top.returncode == 0:
            if Path(top.stdout.strip()).resolve() == self.root.resolve():
                return True
            log.info("workspace is inside %s: Dream runs without versions", top.stdout.strip())
            return False
        done = self._run("init", "--quiet", check=False)
        if done.returncode != 0:
            log.warning("git init failed: %s", done.stderr.strip())
            return False
        return True

    def _require(self) -> None:
        if not self.ensure():
            raise GitError(
                "the workspace has no version history (git is missing, or the workspace "
                "is inside another repository)"
            )

    # -- writing -----------------------------------------------------------------

    def commit(self, paths: list[str], message: str) -> str | None:
        """Commit the changes to `paths` only; the new sha, or None if nothing changed."""
        self._require()
        present = [p for p in paths if (self.root / p).exists() or self._tracked(p)]
        if not present:
            return None
        self._run("add", "--all", "--", *present)
        staged = self._run("diff", "--cached", "--quiet", "--", *present, check=False)
        if staged.returncode == 0:
            return None
        self._run("commit", "--quiet", "--no-verify", "-m", message, "--", *present)
        return self.head()

    def numstat(self, paths: list[str]) -> list[tuple[str, int, int]]:
        """(path, added, removed) of uncommitted changes to `paths`, new files included."""
        self._require()
        existing = [p for p in paths if (self.root / p).exists()]
        if existing:
            self._run("add", "--intent-to-add", "--", *existing)
        base = ["HEAD"] if self._has_head() else []
        out = self._run("diff", "--numstat", *base, "--", *paths, check=False).stdout
        stats = []
        for line in out.splitlines():
            added, removed, name = line.split("\t", 2)
            stats.append((name, _count(added), _count(removed)))
        return stats

    def revert(self, sha: str, *, keep: list[str], message: str) -> str:
        """Undo commit `sha` as a new commit, leaving the paths in `keep` as they are."""
        self._require()
        full = self.resolve(sha)
        done = self._run("revert", "--no-commit", full, check=False)
        if done.returncode != 0:
            self._run("revert", "--abort", check=False)
            raise GitError(f"cannot revert {sha[:12]}: later changes touch the same lines")
        for path in keep:
            # As it is now, whatever the reverted commit did to it (fails if HEAD lacks it).
            self._run("checkout", "HEAD", "--", path, check=False)
        staged = self._run("diff", "--cached", "--quiet", check=False)
        if staged.returncode == 0:
            raise GitError(f"commit {sha[:12]} has nothing left to revert")
        self._run("commit", "--quiet", "--no-verify", "-m", message)
        return self.head()

    # -- reading -----------------------------------------------------------------

    def head(self) -> str:
        return self._run("rev-parse", "HEAD").stdout.strip()

    def resolve(self, sha: str) -> str:
        """The full sha of a commit named by (a prefix of) its sha."""
        self._require()
        if not _SHA.match(sha):
            raise GitError(f"{sha!r} is not a commit id")
        done = self._run("rev-parse", "--verify", "--quiet", f"{sha}^{{commit}}", check=False)
        if done.returncode != 0:
            raise GitError(f"no version {sha} in the workspace history")
        return done.stdout.strip()

    def log(self, *, limit: int = 10, grep: str | None = None, rev: str = "HEAD") -> list[Commit]:
        """Commits reachable from `rev`, newest first; `grep` filters their messages."""
        self._require()
        if not self._has_head():
            return []
        args = ["log", f"-n{limit}", f"--format=%H{_SEP}%aI{_SEP}%s"]
        if grep:
            args += ["-E", f"--grep={grep}"]
        args.append(rev)
        out = self._run(*args).stdout
        commits = []
        for line in out.splitlines():
            sha, date, message = line.split(_SEP, 2)
            commits.append(Commit(sha, date, message))
        return commits

    def show(self, sha: str, paths: list[str] | None = None) -> str:
        """The message, stat and diff of one commit (limited to `paths`)."""
        full = self.resolve(sha)
        args = ["show", "--stat", "--patch", "--format=commit %H%nDate: %aI%n%n    %s%n", full]
        if paths:
            args += ["--", *paths]
        return self._run(*args).stdout

    def _tracked(self, path: str) -> bool:
        return self._run("ls-files", "--error-unmatch", "--", path, check=False).returncode == 0

    def _has_head(self) -> bool:
        return self._run("rev-parse", "--verify", "--quiet", "HEAD", check=False).returncode == 0

    def rewrite_history(self, redact: Callable[[bytes], bytes], *, dry_run: bool = False) -> int:
        """Replay the whole history with every file version and message passed through
        `redact`, into a fresh repository that replaces this one (so no object of the old
        history survives, not even unreachable). Returns how many blobs and messages
        changed (would change, with `dry_run`); 0 leaves the repository untouched."""
        git_dir = self.root / ".git"
        if not git_dir.is_dir() or shutil.which("git") is None:
            return 0
        exported = self._bytes("fast-export", "--all", "--signed-tags=strip")
        from lore.memory.redaction import redact_fast_export

        stream, changed = redact_fast_export(exported, redact)
        if not changed or dry_run:
            return changed
        head = self._run("symbolic-ref", "-q", "HEAD", check=False).stdout.strip()
        fresh = self.root / ".git.rewritten"
        old = self.root / ".git.replaced"
        shutil.rmtree(fresh, ignore_errors=True)
        shutil.rmtree(old, ignore_errors=True)
        self._bytes("init", "--quiet", "--bare", str(fresh))
        self._bytes("--git-dir", str(fresh), "fast-import", "--quiet", "--force", stdin=stream)
        if head:
            self._bytes("--git-dir", str(fresh), "symbolic-ref", "HEAD", head)
        self._bytes("--git-dir", str(fresh), "config", "core.bare", "false")
        os.replace(git_dir, old)
        os.replace(fresh, git_dir)
        shutil.rmtree(old, ignore_errors=True)
        self._run("reset", "--quiet", check=False)  # the index, from the new HEAD
        return changed

    def _bytes(self, *args: str, stdin: bytes | None = None) -> bytes:
        done = subprocess.run(
            ["git", *_IDENTITY, *args],
            cwd=self.root,
            input=stdin,
            capture_output=True,
            timeout=300,
        )
        if done.returncode != 0:
            detail = done.stderr.decode("utf-8", "replace").strip()
            raise GitError(f"git {args[0]} failed: {detail}")
        return done.stdout

    def _run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            ["git", *_IDENTITY, *args],
            cwd=self.root,
            capture_output=True,
            text=True,
            encoding="utf-8",
            errors="replace",
            timeout=60,
        )
        if check and done.returncode != 0:
            raise GitError(f"git {args[0]} failed: {done.stderr.strip() or done.stdout.strip()}")
        return done


def _count(text: str) -> int:
    return int(text) if text.isdigit() else 0  # "-" for binary files
