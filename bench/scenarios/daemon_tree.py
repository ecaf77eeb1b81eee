"""`session/tree` for a side panel through the real daemon (issue 14): the first screen of a long
session (`limit`: the leaf's lists, one page each), one more page, a screen after an append, and
the full answer (every node) for comparison, as one answer and streamed as partial results, and
other requests (`session/entry`) while each is built and sent: how long one waits behind it
(issue 29: at most 20 ms; a client asking every node streams it)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

from bench import Case, Context, scenario
from bench.host_stalls import HostStalls
from bench.lsp import daemon_on_copy, entry_requests_while

LIMIT = 200  # rows per list: more than a panel shows at once


@scenario("daemon_tree", description="session/tree through the daemon: the panel's first screen, a page, and every node (ms)")
def daemon_tree(ctx: Context) -> Iterator[Case]:
    count = ctx.entry_count()
    k = 5 if ctx.smoke else 21
    for kind, compactions in (("compacted, branches", True), ("one long path", False)):
        source = ctx.entries_session(count, compactions=compactions)
        measured: dict[str, list[float]] = {}
        host = HostStalls()

        def measure(source: Path = source, measured: dict[str, list[float]] = measured, host: HostStalls = host) -> None:
            with daemon_on_copy(source) as (daemon, sid):
                def timed(params: dict[str, object]) -> tuple[float, dict[str, object]]:
                    t0 = time.perf_counter()
                    result = daemon.call("session/tree", {"sessionId": sid, **params}, timeout=600)
                    return time.perf_counter() - t0, result

                first, screen = timed({"limit": LIMIT})
                measured["first"] = [first]
                measured["screen"] = [timed({"limit": LIMIT})[0] for _ in range(k)]
                top = screen["lists"][0]  # type: ignore[index]
                cursor = top["rows"][0]["id"]
                branch = top["branch"]
                measured["page"] = [timed({"limit": LIMIT, "branch": branch, "before": cursor})[0] for _ in range(k)]
                after: list[float] = []
                for i in range(k):
                    daemon.call("session/append", {"sessionId": sid, "entries": [{"type": "message", "message": {
                        "role": "user", "content": f"next step {i}", "timestamp": 1_760_000_000_000 + i}}]})
                    after.append(timed({"limit": LIMIT})[0])
                measured["append"] = after
                measured["full"] = [timed({})[0]]
                measured["full streamed"] = [timed({"partialResultToken": "full"})[0]]
                # Once more each way, with other requests asked while it is built and sent: as one
                # answer, and streamed in chunks (what a client asking every node should do).
                leaf = daemon.call("session/context", {"sessionId": sid})["leafId"]
                for key, extra in (("during", {}), ("during streamed", {"partialResultToken": "during"})):
                    with host:
                        windows = entry_requests_while(daemon, "session/tree", {"sessionId": sid, **extra}, sid, leaf)
                    measured[key] = [end - start for start, end in windows] or [0.0]
                    measured[key + " clear"] = [end - start for start, end in windows
                                                if not host.stalled_ms(start, end)] or [0.0]
                daemon.notifications.clear()

        def samples(key: str, measure=measure, measured: dict[str, list[float]] = measured) -> list[float]:
            if not measured:
                measure()
            return measured[key]

        note = {"entries": count, "limit": LIMIT, "session": kind}
        label = f"{count // 1000}k entries, {kind}"
        yield Case(f"first screen after open, {label}", lambda s=samples: s("first"), unit="ms", sampled=True, extra=note)
        yield Case(f"screen again, {label}", lambda s=samples: s("screen"), unit="ms", sampled=True, extra=note)
        yield Case(f"page of {LIMIT} earlier rows, {label}", lambda s=samples: s("page"), unit="ms", sampled=True, extra=note)
        yield Case(f"screen after an append, {label}", lambda s=samples: s("append"), unit="ms", sampled=True, extra=note)
        yield Case(f"every node (no limit), {label}", lambda s=samples: s("full"), unit="ms", sampled=True, extra=note)
        yield Case(f"every node streamed (partialResultToken), {label}", lambda s=samples: s("full streamed"), unit="ms",
                   sampled=True, extra=note)

        for key, what in (("during", "built, one answer"), ("during streamed", "streamed (partialResultToken)")):
            def derive(result: dict[str, object], key: str = key, measured: dict[str, list[float]] = measured,
                       host: HostStalls = host) -> None:
                result["derived"].update(  # type: ignore[attr-defined]
                    max=max(measured[key]) * 1000, max_outside_host_stalls=max(measured[key + " clear"]) * 1000,
                    requests_in_host_stalls=len(measured[key]) - len(measured[key + " clear"]),
                    host_stalls_ms=[round(s.ms) for s in host.stalls])

            yield Case(f"session/entry while every node is {what}, {label}", lambda s=samples, key=key: s(key),
                       unit="ms", sampled=True, extra=note, after=derive)
