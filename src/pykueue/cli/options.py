"""Turn ``--config`` and ``--feature-gates`` into the core's options."""

from __future__ import annotations

from pykueue.api.config import load_config
from pykueue.core.options import SchedulerOptions, options_from_config


def load_options(config_text: str | None, source: str, feature_gates: str) -> SchedulerOptions:
    """Load the Kueue Configuration (defaults when ``config_text`` is None) and gate overrides."""
    cfg = load_config(config_text, source=source or "<config>", feature_gates_flag=feature_gates or None)
    return options_from_config(cfg)
