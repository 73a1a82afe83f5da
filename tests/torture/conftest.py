"""The torture suite runs only when asked for: `make torture` (`pytest -m torture`)."""

from __future__ import annotations

import pytest


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if "torture" in (config.option.markexpr or ""):
        return
    skip = pytest.mark.skip(reason="kill -9 torture: run with `make torture`")
    for item in items:
        if item.get_closest_marker("torture"):
            item.add_marker(skip)
