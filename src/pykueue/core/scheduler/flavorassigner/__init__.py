"""Flavor assignment (upstream ``pkg/scheduler/flavorassigner``)."""
