"""The public surface is pinned: changing it is a deliberate act."""

from __future__ import annotations

import lore


def test_public_names_are_pinned() -> None:
    assert sorted(lore.__all__) == [
        "Config",
        "LoreError",
        "Runtime",
        "ScriptedProvider",
        "__version__",
        "build",
        "load_config",
    ]


def test_every_public_name_resolves() -> None:
    for name in lore.__all__:
        assert getattr(lore, name) is not None
    assert lore.Runtime.__module__ == "lore.runtime"
    assert lore.build.__module__ == "lore.runtime"
    assert issubclass(lore.LoreError, Exception)
