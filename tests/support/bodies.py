"""A response's body whether it was sent whole or streamed (the CSV exports stream,
docs/performance.md "Exports stream")."""


def body_of(response) -> bytes:
    return b"".join(response.streaming_content) if response.streaming else response.content
