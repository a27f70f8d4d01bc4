"""Raw answers are parsed straight into two float arrays per series (docs/performance.md,
"Peak memory of ingest"): the exact values Prometheus sent, NaN and ±Inf included, cut to the
half-open window; a malformed answer is a one-line PrometheusError as before."""
import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from apps.ingest.answer_bytes import _number_columns, matrix_columns
from apps.ingest.prometheus import PrometheusClient
from apps.ingest.prometheus_http import PrometheusError
from apps.ingest.rollup import Samples, Series
from tests.support.fake_http import serving

T0 = 1_700_000_000


def matrix(*items, compact=True) -> str:
    """An answer as Prometheus writes it (compact: parsed item by item) or with spaces (parsed whole)."""
    body = {"status": "success", "data": {"resultType": "matrix", "result": list(items)}}
    return json.dumps(body, separators=(",", ":") if compact else (", ", ": "))


def item(labels, values):
    return {"metric": labels, "values": values}


def fetch(body, start=T0, end=T0 + 600):
    with serving(200, body) as url:
        return PrometheusClient(url).raw_samples("DCGM_FI_DEV_GPU_UTIL", (), start, end)


@pytest.mark.parametrize("compact", [True, False])
def test_values_become_float_arrays_with_nan_and_inf(compact):
    body = matrix(item({"__name__": "DCGM_FI_DEV_GPU_UTIL", "UUID": "GPU-a"},
                       [[T0 - 60, "1"], [T0, "50"], [T0 + 60.5, "NaN"], [T0 + 120, "+Inf"], [T0 + 180, "-Inf"],
                        [T0 + 240, "0.1"], [T0 + 300, "1e-3"], [T0 + 600, "7"]]),
                  item({"UUID": "GPU-b"}, [[T0 + 900, "3"]]),   # nothing in the window: left out
                  compact=compact)
    (series,) = fetch(body)
    assert series.labels == {"UUID": "GPU-a"}   # the metric name is dropped, as before
    samples = series.samples
    assert isinstance(samples, Samples)
    assert samples.ts.dtype == np.float64 and samples.values.dtype == np.float64
    assert samples.ts.tolist() == [T0, T0 + 60.5, T0 + 120, T0 + 180, T0 + 240, T0 + 300]
    v = samples.values.tolist()
    assert v[0] == 50.0 and math.isnan(v[1]) and v[2] == math.inf and v[3] == -math.inf
    assert v[4] == 0.1 and v[5] == 0.001          # the very floats float() gives
    # read as the (time, value) pairs the roll-up's other readers expect
    assert len(samples) == 6 and samples[0] == (T0, 50.0) and samples[-1] == (T0 + 300, 0.001)
    assert [t for t, _ in samples] == samples.ts.tolist()
    part = samples[1:3]
    assert isinstance(part, Samples) and part.ts.tolist() == [T0 + 60.5, T0 + 120] and part[1] == (T0 + 120, math.inf)


def test_item_by_item_parse_gives_what_the_whole_parse_gives():
    tricky = 'a,{"metric":{"x"}]]}'     # the item separator, escaped inside a label's value
    items = [item({"__name__": "m", "UUID": f"GPU-{k}", "pod": tricky if k == 1 else f"p{k}"},
                  [[T0 + 60 * i + k, str(i * 0.1 + k)] for i in range(5)]) for k in range(3)]
    compact, spaced = fetch(matrix(*items)), fetch(matrix(*items, compact=False))
    assert [s.labels for s in compact] == [s.labels for s in spaced] and compact[1].labels["pod"] == tricky
    assert [(s.samples.ts.tolist(), s.samples.values.tolist()) for s in compact] == \
        [(s.samples.ts.tolist(), s.samples.values.tolist()) for s in spaced]
    assert fetch(matrix()) == [] == fetch(matrix(compact=False))


def test_a_broken_item_in_prometheus_layout_is_parsed_whole_and_fails_as_before():
    good = json.dumps(item({"UUID": "GPU-a"}, [[T0, "1"]]), separators=(",", ":"))
    body = '{"status":"success","data":{"resultType":"matrix","result":[' + good + ',{"metric":{"UUID":]}}'
    with pytest.raises(PrometheusError, match="not JSON"):
        fetch(body)


def test_samples_read_as_pairs():
    s = Samples(np.array([1.0, 2.0]), np.array([3.0, 4.0]))
    assert list(s) == [(1.0, 3.0), (2.0, 4.0)] and s == [(1.0, 3.0), (2.0, 4.0)]
    assert Series({}, s) == Series({}, [(1.0, 3.0), (2.0, 4.0)])
    assert s[1:] == [(2.0, 4.0)] and not Samples(np.empty(0), np.empty(0))


@pytest.mark.parametrize("values", [
    [[T0, "oops"]],                 # not a number
    [[T0, "1", "2"]],               # not a pair
    [[T0]],
    [[T0, {"v": 1}]],
    "1,2",                          # not a list of pairs
    [[None, "1"]],
])
@pytest.mark.parametrize("compact", [True, False])
def test_malformed_values_are_one_line_errors(values, compact):
    with pytest.raises(PrometheusError) as exc:
        fetch(matrix(item({"UUID": "GPU-a"}, values), compact=compact))
    message = str(exc.value)
    assert "\n" not in message and "is not a range vector" in message


@pytest.mark.parametrize("compact", [True, False])
def test_an_answer_without_values_is_one_line_error(compact):
    with pytest.raises(PrometheusError, match="is not a range vector"):
        fetch(matrix({"metric": {"UUID": "GPU-a"}}, compact=compact))
    with pytest.raises(PrometheusError, match="is not a Prometheus result list"):
        fetch(json.dumps({"status": "success", "data": {"resultType": "matrix", "result": {"a": 1}}}))


def _text(value: float) -> str:
    """A value as Prometheus writes it: Go's shortest 'f' formatting (no exponent)."""
    return np.format_float_positional(value, unique=True, trim="-")


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 10**6), st.one_of(
    st.floats(allow_nan=False, allow_infinity=False, width=64),
    st.floats(min_value=-1e6, max_value=1e6, allow_nan=False),
    st.integers(-2**63, 2**64).map(float),
    st.sampled_from([0.0, -0.0, 0.1, 1 / 3, 5e-324, 1.7976931348623157e308]))), min_size=1, max_size=40))
def test_plain_numbers_read_from_the_bytes_are_the_floats_float_gives(pairs):
    """The compact answer's values are read as numbers from their bytes (answer_bytes.
    _number_columns); they must be the very floats float() gives the same text, sign of zero
    included, whichever way the text is written (long decimals, integers past 2**53, "-0")."""
    values = [[T0 + t + 0.25 * (t % 4), _text(v)] for t, v in sorted(dict(pairs).items())]
    ((labels, ts, got),) = list(matrix_columns(matrix(item({"UUID": "GPU-a"}, values)).encode()))
    assert labels == {"UUID": "GPU-a"} and ts.tolist() == [t for t, _ in values]
    for (_, text), v in zip(values, got.tolist()):
        want = float(text)
        assert v == want and math.copysign(1, v) == math.copysign(1, want), (text, v)
    if not any(text.startswith("-0") and float(text) == 0 for _, text in values):
        assert _number_columns(json.dumps(values, separators=(",", ":")).encode()) is not None   # the fast path


def test_the_number_path_and_the_whole_parse_agree_on_a_mixed_answer():
    """Items with only plain numbers take the fast path, one with a NaN or an exponent the old
    one; together they give what the answer parsed whole gives."""
    items = [item({"UUID": "GPU-a", "pod": "p"}, [[T0 + 60 * i, str(17 * i + 0.5)] for i in range(6)]),
             item({"UUID": "GPU-b"}, [[T0, "NaN"], [T0 + 60, "3"]]),
             item({"UUID": "GPU-c"}, [[T0, "1e3"], [T0 + 60, "-0"], [T0 + 120.125, "-2.5"]])]
    compact, spaced = fetch(matrix(*items)), fetch(matrix(*items, compact=False))
    assert [s.labels for s in compact] == [s.labels for s in spaced] == [i["metric"] for i in items]
    for a, b in zip(compact, spaced):
        assert a.samples.ts.tolist() == b.samples.ts.tolist()
        assert np.array_equal(a.samples.values, b.samples.values, equal_nan=True)
        assert np.signbit(a.samples.values).tolist() == np.signbit(b.samples.values).tolist()
    assert compact[2].samples.values.tolist() == [1000.0, -0.0, -2.5]
