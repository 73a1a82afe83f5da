"""The documentation builds as a site with `mkdocs build --strict`: a broken link, a
missing anchor or a page left out of the navigation fails; the README stays a first
screen and a short tour, and names every page."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.readme_transcripts import DOCS, README, ROOT


def test_the_site_builds_strictly(tmp_path: Path) -> None:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d", str(tmp_path / "site")],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "site" / "memory" / "index.html").exists()


def test_every_page_is_in_the_navigation() -> None:
    listed = {page.name for page in DOCS[1:]}
    assert listed == {page.name for page in (ROOT / "docs").glob("*.md")}


def test_the_readme_is_a_first_screen_and_a_tour_that_links_every_page() -> None:
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 200
    for page in DOCS[1:]:
        assert f"(docs/{page.name})" in text, page.name
