"""The gateway's HTTP server: uvicorn's, stopping without waiting on the owner.

uvicorn stops by letting every open response finish. A streamed reply whose tool waits
for Approve / Deny would hold it for the whole `approval_timeout`, so Ctrl+C would seem
to do nothing: this server refuses every waiting question first, and those replies end.
"""

from __future__ import annotations

import socket

import uvicorn

from lore.channels.http.approvals import Desk

__all__ = ["STOPPING", "GatewayServer"]

STOPPING = "no one (Lore was stopping)"


class GatewayServer(uvicorn.Server):
    def __init__(self, config: uvicorn.Config, approvals: Desk) -> None:
        super().__init__(config)
        self.approvals = approvals

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        self.approvals.refuse_all(STOPPING)
        await super().shutdown(sockets)
