"""Kueue's controllers: they make the scheduling core's decisions true in the API and react to it."""
