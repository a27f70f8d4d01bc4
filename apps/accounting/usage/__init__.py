"""Every read of the usage rollups (`UsageHour`, `UsageDay`, `UsagePodDay`), and the daily rebuild.

Owns: usage cells for a window and scope (`cells`: the statement's, the API's and the pages'
one query), the pages' and the advice's per-pod, per-hour and per-namespace reads (`reader`),
workloads for right-sizing (`workloads`), the team mapping as read now (`team_mapping`), a
node's price class from its pools (`price_classes`) and the daily rollup kept equal to the
hourly one, with the per-pod day summary the idle list reads for whole days (`daily`). Which
team owns an hour is one rule, docs/teams-and-relabels.md.
May import: `stored` (versions, spans), `pricing`, `calendar`, `core`, `db`, the models.
"""
