"""Quota accounting of the cohort tree (upstream ``pkg/cache/scheduler`` resource nodes, ``pkg/resources``)."""
