"""The API's JSON renderer: DRF's, with orjson doing the encoding.

A month's chargeback statement is thousands of lines (megabytes of JSON); the standard library
encoder spent more time on it than the database did (170 ms against 30 ms for 9 MB). The bytes
are DRF's own: datetimes, Decimals, lazy strings and the like go through DRF's encoder, U+2028
and U+2029 are escaped as DRF escapes them, and an indented answer (the browsable API asks for
one) is left to DRF entirely. One difference: a NaN, which DRF's strict mode refuses with an
error, orjson writes as null.
"""
import orjson
from rest_framework.renderers import JSONRenderer
from rest_framework.utils.encoders import JSONEncoder

from apps.web.rendered import Rendered

_OPTIONS = (orjson.OPT_NON_STR_KEYS | orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS
            | orjson.OPT_PASSTHROUGH_SUBCLASS)


class FastJSONRenderer(JSONRenderer):
    sends_rendered = True    # a stored answer's bytes go out as they are (apps/web/rendered.py)

    def render(self, data, accepted_media_type=None, renderer_context=None):
        if data is None:
            return b""
        if isinstance(data, Rendered):      # re-rendered only when indented JSON is asked for
            if not self.get_indent(accepted_media_type, renderer_context or {}):
                return data.body
            data = orjson.loads(data.body)
        if self.get_indent(accepted_media_type, renderer_context or {}):
            return super().render(data, accepted_media_type, renderer_context)
        try:
            body = orjson.dumps(data, default=JSONEncoder().default, option=_OPTIONS)
        except (TypeError, orjson.JSONEncodeError):
            # What orjson refuses (integers beyond 64 bits, say) gets DRF's own answer, error included.
            return super().render(data, accepted_media_type, renderer_context)
        # DRF escapes the two line separators JavaScript refuses in string literals; so do we.
        return body.replace(b"\xe2\x80\xa8", b"\\u2028").replace(b"\xe2\x80\xa9", b"\\u2029")
