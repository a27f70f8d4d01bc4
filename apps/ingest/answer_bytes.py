"""How Prometheus' answers become Python (docs/performance.md, "Peak memory of ingest"): read
and parsed on the process' one parsing thread, item by item from their bytes when laid out as
Prometheus writes them (else whole, failing as before), label values interned, each series'
values straight into two float arrays. `prometheus.py` asks and checks; this only reads.
"""
from __future__ import annotations

import os
import sys
from concurrent.futures import ThreadPoolExecutor
from itertools import chain

import numpy as np
import orjson
import requests

_parser: tuple[int, ThreadPoolExecutor] | None = None


def on_parsing_thread(work):
    """`work()` run on the process' one parsing thread: answers are read (once Prometheus has
    answered: the headers are in), parsed and converted one at a time, and always by the same
    thread, so their bytes and short-lived objects come from one allocator arena instead of one
    per fetching thread (docs/performance.md, "Peak memory of ingest")."""
    global _parser
    if _parser is None or _parser[0] != os.getpid():   # a forked worker starts its own thread
        _parser = (os.getpid(), ThreadPoolExecutor(max_workers=1, thread_name_prefix="promjson"))
    return _parser[1].submit(work).result()



_MATRIX_HEAD = b'{"status":"success","data":{"resultType":"matrix","result":['
_MATRIX_TAIL = b"]}}"
_ITEM_HEAD = b'{"metric":{'


class NotCompact(Exception):
    """An answer that looked like Prometheus' own layout of a range vector but is not."""


def _item_bytes(content: bytes):
    """The bytes of each item of a range vector answer laid out as Prometheus writes it (compact,
    no warnings), or None: `,{"metric":{` can only be the start of the next item: inside a JSON
    string every quote is escaped, and a label's value is a string, never an object."""
    if not (content.startswith(_MATRIX_HEAD) and content.endswith(_MATRIX_TAIL)):
        return None
    first, last = len(_MATRIX_HEAD), len(content) - len(_MATRIX_TAIL)
    if first < last and not content.startswith(_ITEM_HEAD, first):
        return None

    def items():
        separator, at = b"," + _ITEM_HEAD, first
        while at < last:
            stop = content.find(separator, at, last)
            stop = last if stop < 0 else stop
            yield content[at:stop]
            at = stop + 1
    return items()


def _loads(item: bytes):
    try:
        return orjson.loads(item)
    except orjson.JSONDecodeError:
        raise NotCompact from None


_VALUES = b'},"values":[['
_NUMERIC = b"0123456789.-,"


def _halves(item: bytes) -> tuple[bytes, bytes] | None:
    """An item's labels and values as their own bytes (`{…}` and `[[…]]`) when it is laid out as
    Prometheus writes it, else None: `},"values":[[` can only end the labels, whose values are
    strings with every quote escaped."""
    split = item.find(_VALUES)
    if split < 0 or not item.endswith(b"]]}"):
        return None
    return item[len(_ITEM_HEAD) - 1:split + 1], item[split + len(_VALUES) - 2:-1]


def _items(content: bytes, convert_item):
    """convert_item(labels' bytes, values' bytes) of each item of a range vector answer laid out
    as Prometheus writes it, one at a time, or None for any other answer; an item laid out
    otherwise is parsed whole and passed as (its labels, its values), already read."""
    items = _item_bytes(content)
    if items is None:
        return None

    def each():
        for item in items:
            halves = _halves(item)
            if halves is None:
                parsed = _loads(item)
                yield convert_item(parsed["metric"], parsed["values"])
            else:
                yield convert_item(*halves)
    return each()


def matrix_columns(content: bytes):
    """(labels, timestamps, values) of each item of a range vector answer laid out as Prometheus
    writes it, or None (the caller parses the answer whole). An item's values are read as
    numbers straight from its bytes (`_number_columns`: no Python object per sample) when every
    one is a plain number; otherwise through `value_columns`, as a whole parse reads them. Should
    an item not parse, the items raise NotCompact and the caller parses the whole answer (which
    then fails, or not, as it always did)."""
    def columns(labels, values):
        if isinstance(values, bytes):
            numbers = _number_columns(values)
            return (_loads(labels), *(numbers if numbers is not None else value_columns(_loads(values))))
        return (labels, *value_columns(values))
    return _items(content, columns)


def matrix_pairs(content: bytes, seen: dict, key_of):
    """(labels, key_of(labels), [[time, "value"], …]) of each item of a range vector answer laid
    out as Prometheus writes it, or None (as `matrix_columns`): for answers of a few values per
    series (per-hour aggregates), where parsing the labels is most of the work. `seen`: {labels'
    bytes: (labels, key)} shared by the answers about the same series, so that each series'
    labels are parsed, and its key made, once, and are one dict."""
    def pairs(labels, values):
        if not isinstance(labels, bytes):
            return labels, key_of(labels), values
        known = seen.get(labels)
        if known is None:
            parsed = _loads(labels)
            known = seen[labels] = (parsed, key_of(parsed))
        return known[0], known[1], _loads(values)
    return _items(content, pairs)


def _number_columns(pairs: bytes) -> tuple[np.ndarray, np.ndarray] | None:
    """`[[t,"v"],[t,"v"],…]` as two float arrays when each time and value is a plain decimal
    number, read by orjson as one list of numbers with the quotes and inner brackets taken out
    (half the time of float() per sample, and no object per sample kept); None for anything
    else — NaN, ±Inf, an exponent (Prometheus writes none), "-0" (whose sign a number read as an
    integer would lose) — which `value_columns` then reads."""
    if not (pairs.startswith(b"[[") and pairs.endswith(b"]]")):
        return None
    body = pairs[2:-2]
    flat = body.replace(b"],[", b",").replace(b'"', b"")
    if flat.translate(None, _NUMERIC) or b"-0," in flat or flat.endswith(b"-0"):
        return None
    try:
        numbers = orjson.loads(b"[" + flat + b"]")
    except orjson.JSONDecodeError:
        return None
    if len(numbers) != 2 * (body.count(b"],[") + 1):
        return None
    both = np.array(numbers, dtype=float)
    return both[0::2].copy(), both[1::2].copy()


def body_of(response) -> bytes:
    """The whole body of a response requested with `stream=True`; the connection goes back to
    the pool."""
    try:
        return response.content
    finally:
        response.close()


def converted(raw: bytes, convert, whole, items_of):
    """convert(the answer's items): one at a time from `items_of` (`matrix_columns` or
    `matrix_pairs`) when the answer is laid out as Prometheus writes it, else convert(whole(raw))
    of the answer parsed whole."""
    items = items_of(raw)
    if items is not None:
        try:
            return convert(items)
        except NotCompact:
            pass   # not Prometheus' own layout after all: parsed whole below
    return convert(whole(raw))


def interned(labels: dict) -> dict:
    """The labels with their values interned: a chunk keeps tens of thousands of series' labels
    until it is written, and most values (host, model, driver, job, a device's UUID across the
    metrics) repeat from series to series (docs/performance.md, "Peak memory of ingest")."""
    for name, value in labels.items():
        if type(value) is str:
            labels[name] = sys.intern(value)
    return labels


def drained(result: list):
    """The items of a parsed result list, each dropped from the list as it is handed out."""
    result.reverse()
    while result:
        yield result.pop()


def value_columns(pairs) -> tuple[np.ndarray, np.ndarray]:
    """A series' `values` ([[time, "value"], ...]) as two float arrays, without a tuple per
    sample: each number through float() as before ("NaN", "+Inf", "-Inf" included), anything
    but a list of pairs a ValueError or TypeError."""
    n = len(pairs)
    if not isinstance(pairs, list) or (n and set(map(len, pairs)) != {2}):
        raise ValueError("not a list of (time, value) pairs")
    flat = np.fromiter(map(float, chain.from_iterable(pairs)), dtype=float, count=2 * n)
    return flat[0::2].copy(), flat[1::2].copy()


def json_of(body: bytes):
    """orjson's parse, failing as requests' `.json()` does (so `_call` names a non-JSON answer)."""
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError:
        raise requests.exceptions.JSONDecodeError("not JSON", "", 0) from None
