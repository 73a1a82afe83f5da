"""Ports: the Protocols every store implements, with the records they exchange."""
