"""Days and dates: the billing time zone and its days (`zone`), and dates and instants as users
type them in URLs, pickers and command lines (`parse`; docs/dates-and-money.md).

May import: `core`. Pages and the API never import `parse` themselves: a query string is parsed
once, by `query.filters` (an import-linter contract); they may read the zone from `zone`.
"""
