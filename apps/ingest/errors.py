"""Ingest failures: one line each, meant for the operator."""


class IngestError(Exception):
    """A run that could not complete; the message is one line meant for the operator."""


class IngestBusy(IngestError):
    """Another ingest of the same cluster holds the lock."""
