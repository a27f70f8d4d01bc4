"""Prometheus text read back into numbers, so tests compare figures, not substrings."""
from prometheus_client.parser import text_string_to_metric_families


def sample_values(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """{(sample name, sorted label pairs): value} for every sample of a scrape."""
    out = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return out
