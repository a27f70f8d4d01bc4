"""The writes that move money, one `do_*` function each, atomic and audited (docs/conventions.md,
"Writes that matter"): rate-card edits (`rates`), closing and reopening a month (`periods`),
moving a namespace to a team (`namespaces`), node pools and a cluster's money-moving settings
(`clusters`); their refusals and audit row (`audit`). Pages,
the API, the admin and the commands call these; none writes those rows itself.
May import: every room of accounting below it.
"""
