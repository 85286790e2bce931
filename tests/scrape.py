"""Reading a Prometheus text exposition in tests."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families


def sample(exposition: bytes | str, name: str, **labels: str) -> float:
    """The value of the sample with exactly these labels; 0 when there is none
    (a labelled counter appears only once it has counted)."""
    text = exposition.decode() if isinstance(exposition, bytes) else exposition
    for family in text_string_to_metric_families(text):
        for found in family.samples:
            if found.name == name and found.labels == labels:
                return float(found.value)
    return 0.0
