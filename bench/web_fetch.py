"""What web_fetch costs, beside plain httpx and all of the page's text on the same page.

    python bench/web_fetch.py [--runs 100] [--json]

A page of about 35 KB (an article in Chinese, Russian and English between a menu and a
footer) is served by a real HTTP server on 127.0.0.1, in a thread. The fetch side is
`WebFetcher.fetch` (the address guard resolving and checking, a fresh connection pool,
the size and redirect bookkeeping) beside `httpx.AsyncClient.get` with a fresh client and
the same TLS context, called in turn so both share the machine's load; the reading side
is `readable_text` (trafilatura, the article without its menu) beside trafilatura's
`html2txt`, all of the page's text without looking for the article. p50 and p95 of each,
in ms.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import httpx
import trafilatura

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.web_server import page, web_server  # noqa: E402

from lore.config import WebConfig  # noqa: E402
from lore.tools.web_fetch import Page, WebFetcher, readable_text  # noqa: E402


def _article() -> str:
    paragraphs = []
    for n in range(120):
        paragraphs.append(f"<p>第{n}段：明天北京有大雨，请带伞。气温十五到二十度，东北风三级。</p>")
        paragraphs.append(f"<p>Абзац {n}: завтра в Москве дождь, возьмите зонт и куртку.</p>")
        paragraphs.append(f"<p>Paragraph {n}: rain in Hualien tomorrow, take an umbrella.</p>")
    menu = "".join(f'<li><a href="/s{n}">Section {n}</a></li>' for n in range(60))
    return (
        "<html><head><title>Weather</title></head><body>"
        f"<nav><ul>{menu}</ul></nav><article><h1>Tomorrow</h1>{''.join(paragraphs)}</article>"
        "<footer>© Weather site, all rights reserved</footer></body></html>"
    )


def _summary(times: list[float]) -> dict[str, float]:
    ordered = sorted(times)
    return {
        "p50_ms": round(statistics.median(ordered), 3),
        "p95_ms": round(ordered[int(len(ordered) * 0.95) - 1], 3),
    }


async def _timed(call: Callable[[], Awaitable[object]]) -> float:
    started = time.perf_counter()
    await call()
    return (time.perf_counter() - started) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    html = _article()
    with web_server({"/": page(html)}) as server:
        url = server.url("/")
        fetcher = WebFetcher(WebConfig(allow_networks=("127.0.0.1/32",)))

        tls = httpx.create_ssl_context(trust_env=False)

        async def plain() -> httpx.Response:
            async with httpx.AsyncClient(trust_env=False, verify=tls) as client:
                return await client.get(url)

        async def measure() -> tuple[list[float], list[float], Page]:
            guarded: list[float] = []
            direct: list[float] = []
            fetched = await fetcher.fetch(url)
            await plain()
            for _ in range(args.runs):
                guarded.append(await _timed(lambda: fetcher.fetch(url)))
                direct.append(await _timed(plain))
            return guarded, direct, fetched

        guarded, direct, fetched = asyncio.run(measure())
    readable_text(fetched)  # trafilatura imported and warm
    reading: list[float] = []
    baseline: list[float] = []
    for _ in range(args.runs):
        started = time.perf_counter()
        readable_text(fetched)
        reading.append((time.perf_counter() - started) * 1000)
        started = time.perf_counter()
        trafilatura.html2txt(fetched.body)
        baseline.append((time.perf_counter() - started) * 1000)
    results = {
        "page_bytes": len(fetched.body),
        "fetch_guarded": _summary(guarded),
        "fetch_plain_httpx": _summary(direct),
        "read_trafilatura": _summary(reading),
        "read_all_text": _summary(baseline),
    }
    if args.json:
        print(json.dumps(results, indent=2))
        return
    print(f"page: {results['page_bytes']} bytes, {args.runs} runs each")
    rows = [
        ("fetch, web_fetch's guard", "fetch_guarded", "plain httpx", "fetch_plain_httpx"),
        ("read, trafilatura", "read_trafilatura", "all its text", "read_all_text"),
    ]
    for label, ours, base_label, base in rows:
        a, b = results[ours], results[base]
        assert isinstance(a, dict) and isinstance(b, dict)
        print(
            f"{label:26} p50 {a['p50_ms']:7.2f} ms  p95 {a['p95_ms']:7.2f} ms   "
            f"{base_label:18} p50 {b['p50_ms']:7.2f} ms  p95 {b['p95_ms']:7.2f} ms"
        )


if __name__ == "__main__":
    main()
