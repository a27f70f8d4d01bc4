"""Where a running month will end (docs/forecast.md).

Owns: the run-rate model, plain Python (`model`); each team's month-end forecast fed from usage,
the rate card and the ledger (`teams`); the running month's forecast as a stored answer
(`stored`). May import: `ledger` and every room below it.
"""
