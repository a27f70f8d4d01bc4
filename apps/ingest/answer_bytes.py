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


def matrix_items(content: bytes):
    """The items of a range vector answer, each parsed from its own bytes when it is needed, or
    None unless the answer is laid out as Prometheus writes it (compact, no warnings).

    `,{"metric":{` can only be the start of the next item: inside a JSON string every quote is
    escaped, and a label's value is a string, never an object. Should an item still not parse,
    the items raise NotCompact and the caller parses the whole answer (which then fails, or
    not, as it always did)."""
    if not (content.startswith(_MATRIX_HEAD) and content.endswith(_MATRIX_TAIL)):
        return None
    first, last = len(_MATRIX_HEAD), len(content) - len(_MATRIX_TAIL)
    if first < last and not content.startswith(_ITEM_HEAD, first):
        return None

    def items():
        view, separator, at = memoryview(content), b"," + _ITEM_HEAD, first
        while at < last:
            stop = content.find(separator, at, last)
            stop = last if stop < 0 else stop
            try:
                yield orjson.loads(view[at:stop])
            except orjson.JSONDecodeError:
                raise NotCompact from None
            at = stop + 1
    return items()


def body_of(response) -> bytes:
    """The whole body of a response requested with `stream=True`; the connection goes back to
    the pool."""
    try:
        return response.content
    finally:
        response.close()


def converted(raw: bytes, convert, whole):
    """convert(the answer's items): one at a time from `matrix_items` when the answer is laid out
    as Prometheus writes it, else convert(whole(raw)) of the answer parsed whole."""
    items = matrix_items(raw)
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
