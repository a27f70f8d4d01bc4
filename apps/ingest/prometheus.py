"""The one module that talks to Prometheus (docs/conventions.md, "One home per concept"), with
`queries.py` beside it naming what is asked for, `hourly.py` the per-hour sums it asks for,
`prometheus_http.py` its HTTP session and error, and `answer_bytes.py` reading the answers.

Queries are built from the cluster's configured metric names and selector; every answer is
checked for Prometheus' shape, and every failure becomes a PrometheusError with a one-line
reason naming the cluster's endpoint.
"""
from __future__ import annotations

import logging
import math
from concurrent.futures import ThreadPoolExecutor
from types import GeneratorType

import numpy as np
import requests
from prometheus_api_client import PrometheusApiClientException, PrometheusConnect
from prometheus_client.parser import text_string_to_metric_families
from urllib3.util.retry import Retry

from apps.clusters.outbound import OutboundRefused

from .answer_bytes import (body_of, converted, drained, interned, json_of, matrix_columns, on_parsing_thread,
                           value_columns)
from .hourly import HourlySums
from .prometheus_http import PrometheusError, _one_line, http_session
from .queries import (HOURLY_NONZERO, HOURLY_ROLES, KUBE_STATE_QUERIES, MAX_RAW_DEVICES, OWNER_QUERIES, MetricNames,
                      dcgm_queries, pending_pods, promql_regex_literal, selector, utilization_queries)
from .rollup import HOT_TEMPERATURE_C, Samples, Series

log = logging.getLogger(__name__)


class PrometheusClient(HourlySums):
    def __init__(self, url: str, *, bearer_token: str = "", basic_auth: tuple[str, str] | None = None,
                 ca_bundle_path: str = "", tls_verify: bool = True, timeout_seconds: float = 60.0,
                 series_selector: str = "", compressed: bool | None = None):
        self.url = url.rstrip("/")
        session = http_session(compressed)
        session.verify = (ca_bundle_path or True) if tls_verify else False
        headers = {"Authorization": f"Bearer {bearer_token}"} if bearer_token else None
        # A short transport retry for blips; real backoff belongs to the Celery task.
        retry = Retry(total=2, read=False, backoff_factor=0.2, status_forcelist=(502, 503, 504), allowed_methods=None,
                      raise_on_status=False)
        self._prom = PrometheusConnect(url=self.url, headers=headers, auth=basic_auth, session=session,
                                       retry=retry, timeout=timeout_seconds)
        self.selector = series_selector.strip().strip("{}")

    @classmethod
    def for_cluster(cls, cluster, timeout_seconds: float):
        from apps.clusters.outbound import outbound_problem
        from apps.clusters.secrets import CredentialError

        if problem := outbound_problem(cluster.prometheus_url):   # a row saved before the rules
            raise PrometheusError(f"cluster {cluster.name}: its Prometheus URL is refused: {problem}")
        try:
            token, auth = cluster.credentials()
        except CredentialError as exc:
            raise PrometheusError(f"cluster {cluster.name}: {exc}") from None
        return cls(cluster.prometheus_url, bearer_token=token, basic_auth=auth,
                   ca_bundle_path=cluster.ca_bundle_path, tls_verify=cluster.tls_verify,
                   timeout_seconds=timeout_seconds, series_selector=cluster.series_selector)

    # ------------------------------------------------------------ transport
    def _call(self, what: str, fn, *args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except OutboundRefused as exc:    # a redirect, or an address the rules refuse (docs/security.md)
            raise PrometheusError(f"Prometheus at {self.url} was not asked for {what}: {exc}") from None
        except requests.exceptions.JSONDecodeError:
            raise PrometheusError(f"the answer from {self.url} to {what} is not Prometheus' (not JSON)") from None
        except requests.exceptions.Timeout:
            raise PrometheusError(f"Prometheus at {self.url} timed out answering {what}") from None
        except requests.exceptions.SSLError as exc:
            raise PrometheusError(f"TLS error talking to Prometheus at {self.url}: {_one_line(exc, 200)}") from None
        except requests.exceptions.ConnectionError as exc:
            if "timed out" in str(exc).lower():
                raise PrometheusError(f"Prometheus at {self.url} timed out answering {what}") from None
            raise PrometheusError(f"Prometheus at {self.url} is unreachable (connection refused or no route)") from None
        except requests.exceptions.RetryError as exc:
            raise PrometheusError(f"Prometheus at {self.url} kept failing for {what}: {_one_line(exc, 200)}") from None
        except requests.exceptions.RequestException as exc:
            raise PrometheusError(f"request to Prometheus at {self.url} failed: {_one_line(exc, 200)}") from None
        except PrometheusApiClientException as exc:
            raise PrometheusError(self._http_error(what, str(exc))) from None
        except (ValueError, KeyError, TypeError, AttributeError):
            raise PrometheusError(f"the answer from {self.url} to {what} is not Prometheus' (not its JSON API)") from None

    def _http_error(self, what, message):
        """The status only: the reply's text goes to the log, not to the stored error that pages
        show (a URL pointed at another service would otherwise read that service's pages back;
        docs/security.md, "Outbound requests")."""
        # The client formats non-200 answers as "HTTP Status Code 400 (b'{...error...}')".
        status = message.split("(")[0].replace("HTTP Status Code", "").strip()
        log.warning("Prometheus at %s answered HTTP %s to %s: %s", self.url, status, what, _one_line(message, 500))
        if status == "400" or status == "422":
            return f"Prometheus at {self.url} rejected the query for {what} (HTTP {status}; its reason is in the log)"
        return f"Prometheus at {self.url} answered HTTP {status} to {what}"

    # ------------------------------------------------------------ API
    def check(self) -> None:
        """Fail fast, with a clear reason, before any data is touched."""
        result = self._call("a health check", self._prom.custom_query, "vector(1)")
        if not (isinstance(result, list) and result and isinstance(result[0], dict) and "value" in result[0]):
            raise PrometheusError(f"the answer from {self.url} to a health check is not Prometheus'")

    def lowest_timestamp(self) -> float | None:
        """The oldest sample time the server's storage holds (unix seconds), from the gauge
        `prometheus_tsdb_lowest_timestamp_seconds` on its own /metrics, or None when it does not
        say (a query layer such as Thanos Query or Mimir, a proxy, an error): docs/ingest.md,
        "Re-ingest and Prometheus' retention". An empty store reports a time far in the future."""
        try:
            response = self._call("its own metrics", self._prom._session.get, f"{self.url}/metrics", timeout=10,
                                  headers=self._prom.headers, auth=self._prom.auth)
        except PrometheusError:
            return None
        if response.status_code != 200:
            return None
        try:
            for family in text_string_to_metric_families(response.text):
                if family.name == "prometheus_tsdb_lowest_timestamp_seconds" and family.samples:
                    value = float(family.samples[0].value)
                    return value if math.isfinite(value) else None
        except (ValueError, TypeError, IndexError):
            return None
        return None

    def busiest_hour_query(self, names: MetricNames, start: float, end: float) -> str:
        """The query of `busiest_hour`: one `count_over_time` per utilization query ingest sends
        (whole GPUs' GPU_UTIL, MIG instances' GR_ENGINE_ACTIVE under both profile spellings),
        each summed on its own. Never one selector over both metric names: `count_over_time`
        drops `__name__`, and a whole GPU exports GPU_UTIL and GR_ENGINE_ACTIVE with the same
        labels (dcgm-exporter's default `dcp-metrics-included.csv`), which Prometheus refuses
        as two series with one label set (docs/ingest.md, "Chunks")."""
        span = max(3600, int(math.ceil(end - start)))
        step = max(3600, span // 24 // 3600 * 3600)
        terms = [f"(sum(count_over_time({metric}{selector(self.selector, *matchers)}[1h])) or vector(0))"
                 for metric, matchers in utilization_queries(names)]
        return f"max_over_time(({' + '.join(terms)})[{span}s:{step}s])"

    def busiest_hour(self, names: MetricNames, start: float, end: float) -> float | None:
        """The most utilization samples (whole GPUs' and MIG instances' together) Prometheus holds
        for one hour of [start, end), sampled at up to 24 instants: what sizes ingest's chunks
        (docs/ingest.md, "Chunks"). None when the answer says nothing (no samples, not a number)."""
        query = self.busiest_hour_query(names, start, end)
        result = self._call("the samples per hour", self._fast_query, query, {"time": f"{end:.3f}"})
        try:
            value = float(result[0]["value"][1]) if result else None
        except (KeyError, TypeError, ValueError, IndexError):
            return None
        return value if value and math.isfinite(value) and value > 0 else None

    def label_names(self, metric: str, start: float, end: float) -> list[str]:
        params = {"match[]": metric + selector(self.selector), "start": start, "end": end}
        names = self._call(f"the label names of {metric}", self._prom.get_label_names, params)
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise PrometheusError(f"the answer from {self.url} to a label query is not Prometheus'")
        return names

    def raw_query(self, metric: str, matchers: tuple[str, ...], start: float, end: float) -> str:
        span = int(math.ceil(end - start)) + 1
        return f"{metric}{selector(self.selector, *matchers)}[{span}s]"

    def raw_samples(self, metric: str, matchers: tuple[str, ...], start: float, end: float) -> list[Series]:
        """Every raw sample of the metric with `start <= t < end`, whatever the server's version.

        Prometheus 2.x range selectors include both ends and 3.x excludes the left one, so the
        range reaches one second further back and the half-open window is cut here.
        """
        query = self.raw_query(metric, matchers, start, end)
        what = metric or ", ".join(matchers)      # a query by name alone says which names
        return self._call(what, self._fast_query, query, {"time": f"{end:.3f}"},
                          lambda result: self._parse_matrix(what, result, start, end))

    def _fast_query(self, query: str, params: dict, convert=None):
        """custom_query's request and errors, with orjson parsing the (large) answer; `convert`
        turns the answer's result into what is kept, while the parsed answer is alive; a range
        vector laid out as Prometheus writes it comes to it as `matrix_columns(answer)`.

        The requests run concurrently, but one answer at a time is parsed and converted (a
        parsed answer takes several times its bytes, the converted arrays a fraction of them,
        and the interpreter's lock serialises the parsing anyway); a range vector laid out as
        Prometheus writes it is parsed item by item, each item converted and freed before the
        next is parsed (docs/performance.md, "Peak memory of ingest")."""
        p = self._prom
        response = p._session.request(method=p._method, url=f"{self.url}/api/v1/query",
                                      params={"query": query, **params}, verify=p._session.verify,
                                      headers=p.headers, auth=p.auth, cert=p._session.cert, timeout=p._timeout,
                                      stream=True)
        if response.status_code != 200:
            raise PrometheusApiClientException(f"HTTP Status Code {response.status_code} ({response.content!r})")
        pending = [response]   # its body is read by the parsing thread
        del response

        def whole(raw: bytes):
            return json_of(raw)["data"]["result"]
        if convert is None:
            return on_parsing_thread(lambda: whole(body_of(pending.pop())))
        return on_parsing_thread(lambda: converted(body_of(pending.pop()), convert, whole, matrix_columns))

    def _parse_matrix(self, metric, result, start, end) -> list[Series]:
        """Series of a range vector's items: of the parsed result list, or of `matrix_columns`
        ((labels, timestamps, values) of each item, read from its bytes)."""
        if isinstance(result, list):
            result = ((item["metric"], *value_columns(item["values"])) for item in drained(result))
        elif not isinstance(result, GeneratorType):
            raise PrometheusError(f"the answer from {self.url} for {metric} is not a Prometheus result list")
        out = []
        try:
            for labels, ts, values in result:   # each item freed once converted: peak memory ~ one copy
                labels = interned(labels)
                labels.pop("__name__", None)
                if len(ts) and not (start <= ts[0] and ts[-1] < end):
                    # Prometheus answers each series in time order: cut [start, end) as a slice
                    lo, hi = np.searchsorted(ts, (start, end), side="left").tolist()
                    ts, values = ts[lo:hi], values[lo:hi]
                if len(ts):
                    out.append(Series(labels=labels, samples=Samples(ts, values)))
        except (KeyError, TypeError, ValueError, AttributeError):
            raise PrometheusError(
                f"the answer from {self.url} for {metric} is not a range vector (is the URL Prometheus'?)"
            ) from None
        return out

    # ------------------------------------------------------------ queries by role
    def many(self, specs: dict[str, tuple[str, tuple[str, ...]]], start: float, end: float,
             concurrency: int = 1) -> dict[str, list[Series]]:
        """raw_samples for each role, at most `concurrency` queries in flight (the first error wins)."""
        if concurrency <= 1:
            return {role: self.raw_samples(m, matchers, start, end) for role, (m, matchers) in specs.items()}
        with ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="promql") as pool:
            futures = {role: pool.submit(self.raw_samples, m, matchers, start, end)
                       for role, (m, matchers) in specs.items()}
            return {role: f.result() for role, f in futures.items()}

    def dcgm(self, names: MetricNames, start: float, end: float, concurrency: int = 1,
             aggregate: bool = False, temperature_scale: float = 1.0, lookaround: float = 0.0) -> dict[str, list[Series]]:
        """Raw samples of each DCGM role, from `lookaround` seconds before the chunk to as long
        after it (how long a sample counts depends on its neighbours: docs/accounting.md); with
        `aggregate`, memory as per-hour sums from Prometheus, temperature too except for series
        that ran hot within the chunk, and XID errors only for series that had any (all exact;
        raw whenever that cannot be). Utilization of MIG instances is read under both spellings
        of the profile label (`GPU_I_PROFILE`, `gpu_i_profile`)."""
        queries = dcgm_queries(names)
        hourly = {role: queries.pop(role) for role in HOURLY_ROLES} if aggregate else {}
        hot = {
            "fb_used": None, "power": None,
            "temperature": (lambda hs: any(mx * temperature_scale > HOT_TEMPERATURE_C for *_, mx in hs.hours), True),
            "xid": (lambda hs: any(mx != 0 for *_, mx in hs.hours), False),
        }
        with ThreadPoolExecutor(max_workers=max(1, concurrency), thread_name_prefix="promql") as pool:
            raw = {role: pool.submit(self.raw_samples, m, matchers, start - lookaround, end + lookaround)
                   for role, (m, matchers) in queries.items()}
            agg = {role: pool.submit(self.hourly_or_raw, m, matchers, int(start), int(end), HOURLY_ROLES[role],
                                     *(hot[role] or (None, True)), lookaround, role in HOURLY_NONZERO)
                   for role, (m, matchers) in hourly.items()}
            out = {role: f.result() for role, f in raw.items()}
            out.update({role: f.result() for role, f in agg.items()})
        out["mig_util"] = out.get("mig_util", []) + out.pop("mig_util_lower", [])
        return out

    def gpu_pods(self, start: float, end: float) -> list[Series]:
        """One series per pod that kube-state-metrics shows requesting a GPU resource at any time
        in [start, end): the check of docs/accounting.md "The exporter's own namespace"."""
        metric, matchers = KUBE_STATE_QUERIES["requests"]
        span = int(math.ceil(end - start)) + 1
        query = (f"group by (namespace, pod, exported_namespace, exported_pod) "
                 f"(max_over_time({metric}{selector(self.selector, *matchers)}[{span}s]))")
        result = self._call(f"{metric} by pod", self._fast_query, query, {"time": f"{end:.3f}"})
        if not isinstance(result, list):
            raise PrometheusError(f"the answer from {self.url} for {metric} is not a Prometheus result list")
        try:
            return [Series(labels=item["metric"], samples=((float(item["value"][0]), 1.0),)) for item in result]
        except (KeyError, TypeError, ValueError, IndexError):
            raise PrometheusError(f"the answer from {self.url} for {metric} by pod is not an instant vector") from None

    def grouped(self, metric: str, matchers: tuple[str, ...], by: tuple[str, ...], start: float, end: float
                ) -> list[Series]:
        """One series per label set of `by` that the metric had at any time in [start, end)
        (an instant query over the span: each series' labels only, one sample at `end`)."""
        span = int(math.ceil(end - start)) + 1
        query = f"group by ({', '.join(by)}) (max_over_time({metric}{selector(self.selector, *matchers)}[{span}s]))"
        result = self._call(f"{metric} by {', '.join(by)}", self._fast_query, query, {"time": f"{end:.3f}"})
        if not isinstance(result, list):
            raise PrometheusError(f"the answer from {self.url} for {metric} is not a Prometheus result list")
        try:
            return [Series(labels=item["metric"], samples=((float(item["value"][0]), 1.0),)) for item in result]
        except (KeyError, TypeError, ValueError, IndexError):
            raise PrometheusError(f"the answer from {self.url} for {metric} is not an instant vector") from None

    def owners(self, start: float, end: float) -> dict[str, list[Series]]:
        """Pods' workloads from kube-state-metrics (docs/advice-and-alerts.md, "Right-sizing"):
        one series per (pod, owner), per (ReplicaSet, owner), per (Job, owner), and per pod
        labelled `notebook-name` (exported only when kube-state-metrics' label allowlist has it)."""
        return {role: self.grouped(metric, matchers, by, start, end)
                for role, (metric, matchers, by) in OWNER_QUERIES.items()}

    def kube_state(self, start: float, end: float, concurrency: int = 1,
                   pending_requests_only: bool = False, lookaround: float = 0.0) -> dict[str, list[Series]]:
        """kube-state-metrics series (with `lookaround` seconds on both sides, like dcgm); with
        `pending_requests_only`, GPU requests of the pods that were Pending in the chunk only (all
        the rollups read them for; every running pod's requests would be most of the bytes), and
        under `gpu_pods` the pods that requested a GPU at all."""
        start, end = start - lookaround, end + lookaround
        if not pending_requests_only:
            out = self.many(KUBE_STATE_QUERIES, start, end, concurrency)
            out["gpu_pods"] = self.gpu_pods(start, end)
            out.update(self.owners(start, end))
            return out
        specs = dict(KUBE_STATE_QUERIES)
        metric, matchers = specs.pop("requests")
        out = self.many(specs, start, end, concurrency)
        out["gpu_pods"] = self.gpu_pods(start, end)
        out.update(self.owners(start, end))
        out["requests"] = []
        pods = pending_pods(out["phase"])
        if len(pods) > MAX_RAW_DEVICES:
            out["requests"] = self.raw_samples(metric, matchers, start, end)
        elif pods:
            alternation = "|".join(promql_regex_literal(p) for p in sorted({pod for _, pod in pods}))
            out["requests"] = [s for s in self.raw_samples(metric, (*matchers, f'pod=~"{alternation}"'), start, end)
                               if (s.labels.get("namespace", ""), s.labels.get("pod", "")) in pods]
        return out
