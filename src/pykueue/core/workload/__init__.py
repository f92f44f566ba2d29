"""A Workload's state and transitions (upstream ``pkg/workload``)."""
