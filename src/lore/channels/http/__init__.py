"""Lore over HTTP: the OpenAI-compatible API, the memory REST API, the web page and MCP."""

from lore.channels.http.app import create_app

__all__ = ["create_app"]
