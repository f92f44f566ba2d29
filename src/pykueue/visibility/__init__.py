"""Kueue's visibility API (``visibility.kueue.x-k8s.io``): pending workloads and their positions."""
