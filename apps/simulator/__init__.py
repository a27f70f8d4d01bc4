"""A synthetic GPU cluster for the demo and the tests.

    scenario = build_scenario(hours=6, spelling="exported")      # scenario.py (ground truth)
    expected = expected_figures(scenario)                         # expected.py (the oracle)
    with serve_scenario(scenario, workdir) as prom:               # promserver.py
        ...  # ingest from prom.url, compare with expected

emit.py turns the scenario into DCGM + kube-state-metrics series, openmetrics.py writes them
for promtool, promserver.py backfills a TSDB and runs a real Prometheus over it.
"""
