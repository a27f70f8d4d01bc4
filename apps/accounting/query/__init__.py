"""The one filter a query string says: a window and a scope, parsed once for every page, API
view, CSV download and the advice (`query.filters.filter_from` -> `ReportFilter`), and the date
picker's presets (`presets`; docs/conventions.md, "A query string is parsed once").
May import: `usage` and every room below it.
"""
