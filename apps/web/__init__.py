"""HTTP plumbing with no domain in it, shared by the pages and the API of reports and advice.

It sits below every app (see the import-linter contract in pyproject.toml): it imports no
other app, so both reports and recommendations can use it without importing each other.
"""
