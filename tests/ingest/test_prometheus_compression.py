"""Prometheus' answers come uncompressed unless PROMETHEUS_COMPRESSION (docs/performance.md,
"Answers uncompressed"): gzip cost a real Prometheus several times the query itself. Both ways
give the same rows."""
from datetime import datetime, timezone

import pytest

from apps.ingest.pipeline import ingest
from apps.ingest.prometheus import PrometheusClient
from apps.ingest.prometheus_http import http_session
from apps.simulator.builders import build_scenario
from tests.ingest.test_prometheus_aggregates import figures
from tests.support.prom import served
from tests.support.factories import make_cluster

pytestmark = [pytest.mark.prometheus, pytest.mark.django_db]


def test_answers_are_uncompressed_unless_asked_and_the_rows_are_the_same(settings):
    scenario = build_scenario(name="gz", hours=3, interval_seconds=60, seed=4)
    start = datetime.fromtimestamp(scenario.start, tz=timezone.utc)
    end = datetime.fromtimestamp(scenario.end, tz=timezone.utc)
    query = {"query": "DCGM_FI_DEV_GPU_UTIL[1h]", "time": str(scenario.start + 3600)}
    with served(scenario) as server:
        encodings = {}
        for compressed in (False, True):
            settings.PROMETHEUS_COMPRESSION = compressed
            answer = http_session().get(f"{server.url}/api/v1/query", params=query)
            assert answer.status_code == 200 and answer.json()["data"]["result"]
            encodings[compressed] = answer.headers.get("Content-Encoding")
            client_session = PrometheusClient(server.url)._prom._session
            assert client_session.get(f"{server.url}/api/v1/query", params=query).headers.get(
                "Content-Encoding") == encodings[compressed]
        assert encodings == {False: None, True: "gzip"}

        rows = {}
        for compressed in (False, True):
            settings.PROMETHEUS_COMPRESSION = compressed
            cluster = make_cluster(f"gz-{compressed}", prometheus_url=server.url)
            ingest(cluster, start, end)
            rows[compressed] = figures(cluster)
    assert rows[False][0] and rows[False] == rows[True]
