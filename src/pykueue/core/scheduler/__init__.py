"""The scheduling cycle (upstream ``pkg/scheduler``)."""
