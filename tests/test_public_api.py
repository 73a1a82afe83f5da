"""The public surface is pinned: changing it is a deliberate act."""

from __future__ import annotations

import lore


def test_public_names_are_pinned() -> None:
    assert sorted(lore.__all__) == [
        "Config",
        "Lore",
        "LoreError",
        "ScriptedProvider",
        "__version__",
        "load_config",
    ]


def test_every_public_name_resolves() -> None:
    for name in lore.__all__:
        assert getattr(lore, name) is not None
    assert lore.Lore.__module__ == "lore.app"
    assert issubclass(lore.LoreError, Exception)
