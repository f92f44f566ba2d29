"""Job integrations: the pure per-kind logic that the job reconciler glue drives."""
