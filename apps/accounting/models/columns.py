"""A list of plain values in one column, for tables that store many values per row."""
import json

from django.db import models


class ListColumn(models.Field):
    """A list of numbers or strings: a native array on Postgres (psycopg writes and reads it as a
    Python list; `INSERT … SELECT array_agg(…)` fills it server-side), JSON text elsewhere (the
    demo's SQLite). `of` is the Postgres type of one value (bigint, text, double precision)."""

    description = "A list of values"

    def __init__(self, *args, of: str = "double precision", **kwargs):
        self.of = of
        super().__init__(*args, **kwargs)

    def deconstruct(self):
        name, path, args, kwargs = super().deconstruct()
        kwargs["of"] = self.of
        return name, path, args, kwargs

    def db_type(self, connection):
        return f"{self.of}[]" if connection.vendor == "postgresql" else "text"

    def get_db_prep_value(self, value, connection, prepared=False):
        if value is None:
            return None
        value = list(value)
        return value if connection.vendor == "postgresql" else json.dumps(value)

    def from_db_value(self, value, expression, connection):
        if value is None or isinstance(value, list):
            return value
        return json.loads(value)
