"""Plain-Python money and hour math: no Django, no database (an import-linter contract).

Owns: the rate card as data and a line's cost (`ratecard`), usage cells and statement lines
(`lines`), rounding to a currency's minor unit and largest-remainder splits (`rounding`), shared
idle cost (`shared_idle`), billing periods (`periods`), the usage measures every page shows
(`measures`: GPU-hours, efficiency, idle stretches) and ISO 4217 currencies (`currencies`).
May import: nothing else in the portal. Every figure here is pinned by hand-computed tests.
"""
