"""Right-sizing: what each workload holds against what it uses, and the change that would fit it
(docs/advice-and-alerts.md, "Right-sizing").

Owns: the rules that pick an action and a profile (`rules`), the rows for a window and scope
with their saving (`rows`), a team's or the fleet's summary stored per version (`summary`), the
API view (`api`), the page (`views`), and the default window the worker stores (`prepared`).
"""
