"""The versioned answer store: a month's answers (cells, lines, late data) and the bytes sent for
them, stored with the version of the inputs they were computed from and served only while that
version is current (docs/performance.md, "Stored month answers").

Owns: which tables are inputs (`inputs`), their versions now (`versions`), the stored parts and
their rows (`answers`, `rows`, `spans`), the response bodies (`responses`), who computed a part
(`provenance`) and the recompute after a write (`refresh`). May import: `pricing`, `calendar`,
`core`, `db`, the models. The store is a layer *under* what it stores: the ledger and the forecast
hand it their compute functions; it never imports them.

This module is the store's one front for the rest of the portal: pages, API, advice, ingest and
the project import these names from `apps.accounting.stored`, never a module inside it (an
import-linter contract).
"""
from apps.accounting.stored.inputs import OWNERS, QUOTA, RATES
from apps.accounting.stored.provenance import computed_here, computed_on_read
from apps.accounting.stored.refresh import months_of, refresh_after_commit
from apps.accounting.stored.responses import body as month_body, scope_tag, window_body
from apps.accounting.stored.versions import prefetch_versions, stored_answers, versions_read_once

__all__ = ["OWNERS", "QUOTA", "RATES", "computed_here", "computed_on_read", "months_of", "refresh_after_commit",
           "month_body", "scope_tag", "prefetch_versions", "stored_answers", "versions_read_once", "window_body"]
