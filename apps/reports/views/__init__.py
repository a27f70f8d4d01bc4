"""Report pages: one small module per page; the query logic lives in apps.reports.data."""
