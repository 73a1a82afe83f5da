"""Dream's versions: what each Dream changed, and undoing one (/dream-log, /dream-restore,
`lore dream --log/--restore`). A Dream commit holds only Dream's own changes.
"""

from __future__ import annotations

from contextlib import AbstractContextManager

from lore.ports.notes import Commit, GitError, Versions

__all__ = [
    "COMMIT_PREFIX",
    "CURATED",
    "CURSOR_COMMIT",
    "CURSOR_PATH",
    "RESTORE_PREFIX",
    "dream_commits",
    "dream_diff",
    "dream_log",
    "dream_restore",
    "dream_versions",
    "undo_version",
]

# What is versioned: the files Dream curates, and its cursor.
CURATED = ("SOUL.md", "USER.md", "MEMORY.md")
CURSOR_PATH = "memory/.dream_cursor"
COMMIT_PREFIX = "dream:"  # a Dream that changed files
CURSOR_COMMIT = "dream-cursor:"  # a Dream that only moved its cursor
RESTORE_PREFIX = "dream-restore:"


def dream_log(git: Versions, sha: str | None = None) -> str:
    """The diff of Dream commit `sha`, or of the latest one."""
    found, diff = dream_diff(git, sha)
    return diff if found is not None else "Dream has not changed any file yet."


def dream_diff(git: Versions, sha: str | None = None) -> tuple[str | None, str]:
    """(full sha, its diff) of Dream commit `sha` or of the latest one; (None, "") when
    Dream never changed a file."""
    git.ensure()
    if sha is None:
        latest = git.log(limit=1, grep=f"^{COMMIT_PREFIX}")
        if not latest:
            return None, ""
        sha = latest[0].sha
    full = git.resolve(sha)
    return full, git.show(full, [*CURATED, CURSOR_PATH]).rstrip()


def dream_commits(git: Versions, *, limit: int = 10) -> list[Commit]:
    """Recent Dream versions (and restores), newest first."""
    git.ensure()
    return git.log(limit=limit, grep=f"^({COMMIT_PREFIX}|{RESTORE_PREFIX})")


def dream_versions(git: Versions, *, limit: int = 10) -> str:
    """Recent Dream versions (and restores), newest first, for /dream-restore."""
    commits = dream_commits(git, limit=limit)
    if not commits:
        return "No Dream versions yet."
    lines = ["Dream versions, newest first (/dream-restore SHA undoes one):"]
    for commit in commits:
        when = commit.date[:16].replace("T", " ")
        lines.append(f"  {commit.sha[:8]}  {when}  {commit.message}")
    return "\n".join(lines)


def dream_restore(git: Versions, dream: AbstractContextManager[bool], sha: str) -> str:
    """Undo commit `sha` (see `undo_version`), in words."""
    full, new = undo_version(git, dream, sha)
    return f"Undid {full[:8]}; the files are restored as version {new[:8]}."


def undo_version(git: Versions, dream: AbstractContextManager[bool], sha: str) -> tuple[str, str]:
    """Undo the changes of commit `sha` as a new commit; the Dream cursor stays put.
    `dream` is Dream's own claim (`Services.exclusive("dream", …)`): never during a run.
    Returns the full shas of the commit undone and of the new one."""
    git.ensure()
    with dream as free:
        if not free:
            raise GitError("Dream is running; restore when it is done")
        full = git.resolve(sha)
        git.commit([*CURATED, CURSOR_PATH], "workspace: changes made outside Dream")
        original = git.log(limit=1, rev=full)[0].message
        message = f"{RESTORE_PREFIX} revert {full[:8]} ({original})"
        new = git.revert(full, keep=[CURSOR_PATH], message=message)
    return full, new
