"""A kueuectl-compatible CLI (upstream ``cmd/kueuectl``): ``pykueue list|create|stop|resume|pending``
and the kubectl plugin ``kubectl kueue ...``."""
