"""The queue manager split by concern; import the public API from ``pykueue.core.queue_manager``."""
