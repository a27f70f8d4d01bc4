"""One measured step of the bench, run in its own process so its peak RSS is its own.

    python -m tests.bench.child ingest --cluster NAME --url URL --start ISO --end ISO
    python -m tests.bench.child floor --url URL --start ISO --end ISO

`floor` issues exactly the PromQL queries ingest issues for the window (same chunks, same
concurrency) and reads each answer's bytes without parsing them: what Prometheus and the
network cost, the floor ingest is compared with. Prints one JSON line.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime


def _setup_django():
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gpuportal.settings")
    import django

    django.setup()


def floor(url: str, start: datetime, end: datetime) -> dict:
    import requests
    from django.conf import settings

    from apps.clusters.models import Cluster
    from apps.ingest.pipeline import chunk_plan, first_chunk, metric_names
    from apps.ingest.writer import from_unix
    import orjson

    from apps.ingest.prometheus import PrometheusClient
    from apps.ingest.queries import (
        HOURLY_NONZERO, HOURLY_ROLES, KUBE_STATE_QUERIES, MAX_RAW_DEVICES, dcgm_queries, pending_pods, promql_regex_literal,
    )
    from apps.ingest.rollup import Series

    names = metric_names(Cluster(name="floor", prometheus_url=url))
    client = PrometheusClient(url)
    dcgm = dcgm_queries(names)
    session = requests.Session()
    total_bytes = 0
    started = time.perf_counter()

    def one(path, params, keep=False):
        r = session.get(f"{url}/api/v1/{path}", params=params, timeout=300)
        r.raise_for_status()
        return (len(r.content), r.content) if keep else (len(r.content), None)

    aggregate = settings.INGEST_PROMETHEUS_AGGREGATES

    def requests_of(lo, hi):
        """Exactly the requests ingest sends for the chunk [lo, hi) (bar the few raw follow-ups
        for hot or erroring devices, which depend on the answers)."""
        for role, (m, matchers) in [*dcgm.items(), *KUBE_STATE_QUERIES.items()]:
            if aggregate and role == "requests":
                continue   # sent after the phase answer, as ingest does
            if aggregate and role in HOURLY_ROLES:
                params = client.hourly_params(m, matchers, lo, hi, HOURLY_ROLES[role], role in HOURLY_NONZERO)
                if params is not None:
                    for agg, agg_params in params.items():
                        yield f"{role}:{agg}", "query_range", agg_params
                    continue
            yield role, "query", {"query": client.raw_query(m, matchers, lo, hi), "time": f"{hi:.3f}"}

    def pending_requests(phase_body, lo, hi):
        """The requests query ingest sends once it knows which pods were Pending."""
        phase = [Series(item["metric"], [(float(t), float(v)) for t, v in item["values"]])
                 for item in orjson.loads(phase_body)["data"]["result"]]
        pods = pending_pods(phase)
        m, matchers = KUBE_STATE_QUERIES["requests"]
        if not pods:
            return None
        if len(pods) <= MAX_RAW_DEVICES:
            alternation = "|".join(promql_regex_literal(p) for p in sorted({pod for _, pod in pods}))
            matchers = (*matchers, f'pod=~"{alternation}"')
        return {"query": client.raw_query(m, matchers, lo, hi), "time": f"{hi:.3f}"}

    with ThreadPoolExecutor(max_workers=settings.INGEST_QUERY_CONCURRENCY) as pool:
        head = first_chunk(start, end)   # as ingest reads them: its first hour, then the planned chunks
        for chunk in [head, *chunk_plan(client, names, from_unix(head.end), end)]:
            lo, hi = chunk.start, chunk.end
            futures = {role: pool.submit(one, path, params, role == "phase")
                       for role, path, params in requests_of(lo, hi)}
            results = {role: f.result() for role, f in futures.items()}
            total_bytes += sum(n for n, _ in results.values())
            if aggregate:
                params = pending_requests(results["phase"][1], lo, hi)
                if params is not None:
                    total_bytes += one("query", params)[0]
    return {"wall_seconds": round(time.perf_counter() - started, 3), "answer_bytes": total_bytes}


def ingest(cluster_name: str, url: str, start: datetime, end: datetime) -> dict:
    from apps.clusters.models import Cluster
    from apps.ingest.pipeline import ingest as run_ingest

    cluster, _ = Cluster.objects.get_or_create(name=cluster_name, defaults={"prometheus_url": url})
    started = time.perf_counter()
    run = run_ingest(cluster, start, end, trigger="bench")
    return {"wall_seconds": round(time.perf_counter() - started, 3), "rows_written": run.rows_written,
            "samples_read": run.samples_read}


def own_peak_rss_mb() -> float | None:
    """This process' own peak resident set (VmHWM of its memory map), or None off Linux. The
    parent's `wait4` cannot tell it: a child started by `vfork` + `exec` (Python's subprocess)
    inherits the parent's peak into its `ru_maxrss` at the exec (Linux's exec_mmap), so a bench
    that had built a TSDB in-process read its own 346 MB as every child's."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return round(int(line.split()[1]) / 1024.0, 1)   # kB
    except OSError:
        pass
    return None


def main(argv=None) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=("ingest", "floor"))
    parser.add_argument("--cluster", default="bench-fleet")
    parser.add_argument("--url", required=True)
    parser.add_argument("--start", required=True)
    parser.add_argument("--end", required=True)
    args = parser.parse_args(argv)
    _setup_django()
    start, end = datetime.fromisoformat(args.start), datetime.fromisoformat(args.end)
    result = floor(args.url, start, end) if args.mode == "floor" else ingest(args.cluster, args.url, start, end)
    result["own_peak_rss_mb"] = own_peak_rss_mb()
    json.dump(result, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
