"""Per-hour sums, counts and maxima counted by Prometheus (docs/performance.md, "Ingest: what was
measured, what was chosen"): memory and temperature without their samples, exact over
`[hour, hour + 1 h)` on Prometheus 2.x and 3.x alike, and raw samples instead wherever the sums
cannot be exact or a device needs its samples. A part of `PrometheusClient` (prometheus.py),
which it relies on for the transport (`_call`, `_prom`, `url`, `selector`) and raw samples.
"""
from __future__ import annotations

import math
from types import GeneratorType

from .answer_bytes import body_of, converted, drained, interned, json_of, matrix_pairs, on_parsing_thread
from .prometheus_http import PrometheusError
from .queries import MAX_RAW_DEVICES, promql_regex_literal, selector
from .rollup import DCGM_NO_VALUE, HourlySeries


class HourlySums:
    def range_closed_on_left(self) -> bool | None:
        """Prometheus 2.x range selectors include their left end, 3.x exclude it; None: unknown."""
        if not hasattr(self, "_left_closed"):
            try:
                info = self._call("the build info", self._prom._session.get,
                                  f"{self.url}/api/v1/status/buildinfo", timeout=10,
                                  headers=self._prom.headers, auth=self._prom.auth)
                version = info.json()["data"]["version"] if info.status_code == 200 else ""
                major = int(version.split(".")[0]) if version[:1].isdigit() else None
            except (PrometheusError, ValueError, KeyError, TypeError):
                major = None
            self._left_closed = None if major is None else major < 3
        return self._left_closed

    def hourly_queries(self, metric: str, matchers: tuple[str, ...], aggs: tuple[str, ...],
                       nonzero: bool = False) -> dict[str, str] | None:
        """One query per aggregate, each answering it over [hour start, hour end) when evaluated
        at hour end − 1 ms. Separate queries, not one joined by `or` (each aggregate's series
        relabelled to tell them apart): the join and the relabelling cost Prometheus more than
        the three aggregates themselves (docs/performance.md, "Chunks sized from Prometheus").
        `nonzero`: only the hours whose aggregate is not 0 (NaN included, which makes the answer
        inexact as ever)."""
        left_closed = self.range_closed_on_left()
        if left_closed is None:
            return None
        span = "3599999ms" if left_closed else "3600s"   # both cover [start, end − 1 ms] on the ms grid
        sel = f"{metric}{selector(self.selector, *matchers)}[{span}]"
        return {agg: f"{agg}_over_time({sel})" + (" != 0" if nonzero else "") for agg in aggs}

    def hourly_params(self, metric, matchers, start: int, end: int, aggs, nonzero: bool = False
                      ) -> dict[str, dict] | None:
        """The /api/v1/query_range parameters of `hourly`, per aggregate (the bench's floor issues
        the same)."""
        queries = self.hourly_queries(metric, matchers, aggs, nonzero)
        if queries is None:
            return None
        return {agg: {"query": query, "start": f"{start + 3600 - 0.001:.3f}", "end": f"{end - 0.001:.3f}",
                      "step": "3600"} for agg, query in queries.items()}

    def hourly(self, metric: str, matchers: tuple[str, ...], start: int, end: int,
               aggs: tuple[str, ...] = ("sum", "count", "max"), nonzero: bool = False) -> list[HourlySeries] | None:
        """Per-hour sum / count / max of each series in [start, end) (whole hours; with `nonzero`,
        only the hours and series where they are not 0), or None when Prometheus cannot answer
        exactly (unknown version, or a NaN/Inf among the samples)."""
        params = self.hourly_params(metric, matchers, start, end, aggs, nonzero)
        if params is None:
            return None
        hours: dict[tuple, dict[str, dict[int, float]]] = {}
        labels_of: dict[tuple, dict] = {}
        seen: dict[bytes, tuple] = {}     # a series' labels parsed once for all its aggregates
        for agg, agg_params in params.items():
            response = self._call(metric, self._prom._session.get, f"{self.url}/api/v1/query_range",
                                  params=agg_params, timeout=self._prom._timeout, headers=self._prom.headers,
                                  auth=self._prom.auth, stream=True)
            if response.status_code != 200:
                raise PrometheusError(self._http_error(
                    metric, f"HTTP Status Code {response.status_code} ({response.content[:300]!r})"))
            pending = [response]
            del response
            # as _fast_query: the body read, parsed item by item and converted on the one parsing thread
            exact = on_parsing_thread(lambda: converted(
                self._call(metric, body_of, pending.pop()),
                lambda result, agg=agg: self._add_hourly(metric, agg, result, hours, labels_of),
                lambda raw: self._call(metric, json_of, raw), lambda raw: matrix_pairs(raw, seen, _series_key)))
            if not exact:
                return None
        return [HourlySeries(labels=labels_of[key], hours=_hour_rows(by_agg, start, end))
                for key, by_agg in hours.items()]

    def _add_hourly(self, metric, agg: str, result, hours: dict, labels_of: dict) -> bool:
        """Add one aggregate's answer to `hours` ({series: {aggregate: {hour: value}}}): its
        parsed body, or `matrix_pairs` ((labels, series key, values) of each item, freed once
        read). False when a value is NaN or ±Inf, or DCGM's no-value marker (the raw path skips
        such samples; Prometheus' sum cannot). Safe to repeat."""
        isfinite = math.isfinite
        try:
            if not isinstance(result, GeneratorType):
                result = ((item["metric"], _series_key(item["metric"]), item["values"])
                          for item in drained(result["data"]["result"]))
            for labels, key, values in result:
                by_agg = hours.get(key)
                if by_agg is None:        # each series comes once per aggregate: interned once
                    by_agg = hours[key] = {}
                    labels_of[key] = interned(labels)
                column = by_agg.get(agg)
                if column is None:
                    column = by_agg[agg] = {}
                for ts, value in values:
                    v = float(value)
                    if not isfinite(v) or v in DCGM_NO_VALUE:   # a max holding a DCGM marker is one
                        return False
                    column[int(round(float(ts) + 0.001)) - 3600] = v
        except (KeyError, TypeError, ValueError, AttributeError):
            raise PrometheusError(f"the answer from {self.url} for {metric} is not a range query result") from None
        return True

    def hourly_or_raw(self, metric, matchers, start: int, end: int, aggs, needs_raw=None, keep_rest=True,
                      lookaround: float = 0.0, nonzero: bool = False):
        """Hourly sums per series; every series of a device (by UUID) for which `needs_raw(hourly)`
        holds on any of its series as raw samples instead (a few: fetched by device; all of the
        device's series, so its samples' durations are measured against each other), the other
        devices' series kept (`keep_rest`) or dropped; `nonzero` as `hourly`."""
        hourly = self.hourly(metric, matchers, start, end, aggs, nonzero)
        if hourly is None:
            return self.raw_samples(metric, matchers, start, end)
        if needs_raw is None:
            return hourly
        wanted = [h for h in hourly if needs_raw(h)]
        if not wanted:
            return hourly if keep_rest else []
        by_key: dict[str, set] = {}
        for h in wanted:
            key = "UUID" if "UUID" in h.labels else "uuid" if "uuid" in h.labels else None
            if key is None:
                return self.raw_samples(metric, matchers, start, end)   # raw for all: exact either way
            by_key.setdefault(key, set()).add(h.labels[key])
        if sum(len(v) for v in by_key.values()) > MAX_RAW_DEVICES:
            return self.raw_samples(metric, matchers, start, end)
        raw_devices = {(k, v) for k, values in by_key.items() for v in values}
        rest = [h for h in hourly if not any((k, h.labels.get(k)) in raw_devices for k in ("UUID", "uuid"))] \
            if keep_rest else []
        raw = []
        for key, values in by_key.items():
            alternation = "|".join(promql_regex_literal(v) for v in sorted(values))
            raw.extend(self.raw_samples(metric, (*matchers, f'{key}=~"{alternation}"'), start - lookaround,
                                        end + lookaround))
        return rest + raw


def _series_key(labels: dict) -> tuple:
    """A per-hour series' identity across its aggregates' answers: its labels, sorted (without
    `__name__`, which the `*_over_time` functions drop anyway)."""
    labels.pop("__name__", None)
    return tuple(sorted(labels.items()))


def _hour_rows(by_agg: dict[str, dict[int, float]], start: int, end: int) -> list[tuple]:
    """(hour, sum, count, max) of each hour in [start, end) that any aggregate answered, in
    time order: 0 for a sum or count not asked for (or not answered), the sum for such a max."""
    sums, counts, maxima = (by_agg.get(agg) or {} for agg in ("sum", "count", "max"))
    hours = set(sums).union(counts, maxima)
    return sorted((h, sums.get(h, 0.0), int(counts.get(h, 0)), maxima[h] if h in maxima else sums.get(h, 0.0))
                  for h in hours if start <= h < end)
