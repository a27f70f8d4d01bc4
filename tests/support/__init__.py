"""What several test folders share: the one set of factories (factories.py), the shared
fixtures (fixtures.py), seeds, series and service harnesses (docs/architecture.md, "The tests")."""
