"""The workspace: user-editable Markdown that shapes every prompt (AGENTS, SOUL, USER...).

Files are created from templates on first run and re-read every turn, so an edit applies
to the very next request. A file still equal to its template is not sent to the model.
"""

from __future__ import annotations

import os
from pathlib import Path

from lore.ports.notes import TEMPLATED, WorkspaceFile, template

__all__ = ["BOOTSTRAP_FILES", "Workspace"]

# Order matters: it is the order the files appear in the system prompt.
BOOTSTRAP_FILES = ("AGENTS.md", "SOUL.md", "USER.md", "TOOLS.md")


class Workspace:
    def __init__(self, root: Path, *, confined: bool = False) -> None:
        self.root = root
        # A project folder is not Lore's: a file there that links outside it is not read.
        self.confined = confined

    @property
    def memory_dir(self) -> Path:
        return self.root / "memory"

    def ensure(self) -> None:
        """Create the workspace and any missing template file (never overwrite)."""
        self.memory_dir.mkdir(parents=True, exist_ok=True)
        for name in TEMPLATED:
            path = self.root / name
            if not path.exists():
                path.write_text(template(name), encoding="utf-8")

    def read(self, name: str) -> str | None:
        """The file's text, or None when it is missing, empty or still the template."""
        path = self.root / name
        if self.confined and not _inside(path, self.root):
            return None
        try:
            text = path.read_text(encoding="utf-8")
        except (FileNotFoundError, IsADirectoryError, UnicodeDecodeError):
            return None
        if not text.strip():
            return None
        if name in TEMPLATED:
            if text.strip() == template(name).strip():
                return None
            text = _without_instructions(text, name)
        return text.strip() or None

    def bootstrap(self) -> list[WorkspaceFile]:
        found = []
        for name in BOOTSTRAP_FILES:
            text = self.read(name)
            if text is not None:
                found.append(WorkspaceFile(name, text))
        return found


def _without_instructions(text: str, name: str) -> str:
    """`text` without the template's note to the user ("Edit this file to…"): once Dream
    or the user adds to a file, that note would otherwise go to the model every turn."""
    paragraphs = {" ".join(p.split()) for p in template(name).split("\n\n")}
    notes = {p for p in paragraphs if "not sent to the model" in p}
    kept = [p for p in text.split("\n\n") if " ".join(p.split()) not in notes]
    return "\n\n".join(kept)


def _inside(path: Path, root: Path) -> bool:
    real, top = Path(os.path.realpath(path)), Path(os.path.realpath(root))
    return top in real.parents and real.is_file()
