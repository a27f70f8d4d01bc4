"""A billing month (docs/chargeback.md, "One month, one answer").

Owns: the month's statement, the one read of its money (`ledger.statements.statement`); how an open
month's answer is computed and stored (`answer`); the frozen cells a close keeps (`frozen`);
late data for a closed month (`late_data`); the month's money split for the views
(`money`: by team, namespace, day, late hours); any window's usage as billed, a closed month's
days as its close froze them (`as_billed`); what a statement states besides its lines
(`facts`); the month's figures day by day, which the FOCUS export is cut from (`daily_money`).
May import: `usage`, `stored`, `pricing`, `calendar`, `core`, `db`, the models.
"""
