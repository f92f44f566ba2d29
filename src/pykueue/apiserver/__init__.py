"""Embedded Kubernetes-compatible API server (see docs/design/control-plane.md)."""
