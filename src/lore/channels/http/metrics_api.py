"""`GET /metrics`: the process's figures (lore.metrics) in Prometheus' text format, with
four read at scrape time: the embedding backlog, the outbox's depth, the replies still
running and whether the database answers (while it does not, the two read from it are
left out and the scrape still succeeds). The owner's
token only: the figures name tools and channels (Prometheus sends it with
`authorization: {credentials_file: …}`)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import TYPE_CHECKING, Annotated

from fastapi import APIRouter, Depends, Request
from fastapi.responses import Response

from lore.channels.http.auth import Client, Forbidden
from lore.channels.http.context import caller, gateway
from lore.errors import DatabaseUnavailable
from lore.metrics import DECLARED, METRICS

if TYPE_CHECKING:
    from prometheus_client.metrics_core import Metric

    from lore.runtime import Runtime

__all__ = ["router"]

router = APIRouter(tags=["gateway"])


@router.get("/metrics", response_class=Response)
async def metrics(request: Request, client: Annotated[Client, Depends(caller)]) -> Response:
    """Counters and histograms of turns, tools, searches and reminders; gauges of the
    embedding backlog and the replies running now."""
    from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

    if not client.is_owner:
        raise Forbidden("the figures are the owner's: use the owner's token")
    state = gateway(request)
    backlog: int | None
    pending: int | None
    try:
        backlog, pending = await asyncio.to_thread(_read_now, state.lore)
    except DatabaseUnavailable:  # the figure that matters now is lore_database_up 0
        backlog = pending = None
    up = state.lore.database_state().state != "unreachable" and backlog is not None
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Collector(backlog, pending, len(state.running), up))
    body = await asyncio.to_thread(generate_latest, registry)
    return Response(body, media_type=CONTENT_TYPE_LATEST)


def _read_now(lore: Runtime) -> tuple[int, int]:
    """Search entries still waiting for a vector; outbox items still to deliver."""
    return lore.search_index.pending_vectors(), lore.outbox.pending()


class _Collector:
    def __init__(self, backlog: int | None, pending: int | None, running: int, up: bool) -> None:
        self.backlog = backlog
        self.pending = pending
        self.running = running
        self.up = up

    def collect(self) -> Iterator[Metric]:
        from prometheus_client.core import (
            CounterMetricFamily,
            GaugeMetricFamily,
            HistogramMetricFamily,
        )

        counters = METRICS.counters()
        histograms = METRICS.histograms()
        for name, (kind, text) in DECLARED.items():
            if kind == "counter":
                keys = [k for k in counters if k[0] == name]
                labels = sorted({label for _, pairs in keys for label, _ in pairs})
                counter = CounterMetricFamily(name, text, labels=labels)
                for key in sorted(keys):
                    values = dict(key[1])
                    counter.add_metric([values.get(label, "") for label in labels], counters[key])
                yield counter
            else:
                keys = [k for k in histograms if k[0] == name]
                labels = sorted({label for _, pairs in keys for label, _ in pairs})
                histogram = HistogramMetricFamily(name, text, labels=labels)
                for key in sorted(keys):
                    values, seen = dict(key[1]), histograms[key]
                    histogram.add_metric(
                        [values.get(label, "") for label in labels],
                        [(bound, float(n)) for bound, n in seen.cumulative()],
                        seen.total,
                    )
                yield histogram
        if self.backlog is not None:
            yield GaugeMetricFamily(
                "lore_embedding_backlog", "Search entries still waiting for a vector.", self.backlog
            )
        if self.pending is not None:
            yield GaugeMetricFamily(
                "lore_outbox_pending", "Reminder occurrences still to deliver.", self.pending
            )
        yield GaugeMetricFamily(
            "lore_database_up",
            "1 while the database answers, 0 while it cannot be reached.",
            float(self.up),
        )
        yield GaugeMetricFamily(
            "lore_replies_running", "Replies still running after their client left.", self.running
        )
