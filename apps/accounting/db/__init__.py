"""Postgres helpers with no accounting in them: bulk writes by binary COPY (`db.bulk.insert_rows`,
`upsert_rows`), the collector paused while a month is in memory, planner settings for one
statement and reads in one snapshot (docs/performance.md, "Bulk writes"). May import: nothing
else in the portal; ingest writes its rollups through it.
"""
