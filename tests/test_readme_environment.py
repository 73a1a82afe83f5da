"""The reference's list of environment variables names every one Lore reads."""

from __future__ import annotations

import re
from pathlib import Path

from lore import config
from tests.readme_transcripts import docs_text

ROOT = Path(__file__).resolve().parents[1]


def test_the_readme_names_every_environment_variable_lore_reads() -> None:
    readme = docs_text()
    (listing,) = re.findall(r"^Environment: (.*?)\n\n", readme, flags=re.S | re.M)
    named = set(re.findall(r"`([A-Z][A-Z0-9_]+)`", listing))
    # The settings' variables, where Lore's home is, whose name the user goes by, and
    # where the service's unit goes.
    read = {*config._ENV, "LORE_HOME", "USER", "USERNAME", "XDG_CONFIG_HOME"}
    assert sorted(read - named) == []
