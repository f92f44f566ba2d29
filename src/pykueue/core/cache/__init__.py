"""The scheduler's cache of ClusterQueues, cohorts and admitted usage, and its snapshots (upstream ``pkg/cache/scheduler``)."""
