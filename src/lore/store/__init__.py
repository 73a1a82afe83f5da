"""The embedded database `lore.db`: one connection, numbered migrations, nestable transactions."""

from lore.store.database import Database

__all__ = ["Database"]
