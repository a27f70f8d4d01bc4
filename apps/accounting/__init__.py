"""Accounting: the hours and the money as data (docs/architecture.md, "Inside accounting").

Its rooms, top floor first; a room imports only from rooms below it (an import-linter layers
contract in pyproject.toml):

- `actions/`  the audited writes that move money (`do_*`, by noun: rates, periods, namespaces)
- `forecast/` where a team's running month will end (the model, per team, stored)
- `query/`    the one parse of a query string into a window and scope, and the date presets
- `ledger/`   a month: its statement (the one read of its money), its stored answer, frozen
              cells of closed months, late data, money split for the views, facts, daily money
- `usage/`    every read of the hourly and daily rollups: usage cells, the pages' reader,
              workloads, the team mapping, node price classes, the daily rebuild
- `stored/`   the versioned answer store, behind one front (`stored/__init__.py`)
- `pricing/`  the rate card as stored (`Rate` rows to a `RateCard`) and its CSV
- `calendar/` the billing zone and its days; dates and instants as users type them
- `text.py`   figures written for people (money, quantities, durations)
- `core/`     plain-Python money and hour math: rate-card look-ups, cells and lines, rounding,
              shared idle, billing periods, measures, currencies (no Django)
- `db/`       Postgres helpers with no accounting in them (bulk writes, snapshots)

`models/`, `signals.py`, `checks.py`, `admin.py`, `apps.py` and `tasks.py` are Django's usual
places.
"""
