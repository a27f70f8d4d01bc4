"""Answers already rendered: a stored month answer is sent as the bytes it was stored as.

The project's JSON renderer (gpuportal/json.py) sends a `Rendered` body as it is; views ask
`renders_stored(renderer)` before handing it one, and render what they store with that very
renderer (`render_plain`), so the bytes are the ones it would have produced (docs/performance.md).
"""


class Rendered:
    __slots__ = ("body",)

    def __init__(self, body: bytes):
        self.body = body


def renders_stored(renderer) -> bool:
    """Whether this renderer sends a `Rendered` body as it is (the JSON API renderer)."""
    return bool(getattr(renderer, "sends_rendered", False))


def render_plain(renderer, data) -> bytes:
    """`data` as the renderer writes it when no indentation is asked for."""
    return renderer.render(data, renderer.media_type, {})
