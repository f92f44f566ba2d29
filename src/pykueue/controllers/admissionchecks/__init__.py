"""Built-in admission check controllers (upstream ``pkg/controller/admissionchecks/``).

* :mod:`pykueue.controllers.admissionchecks.provisioning` — ``kueue.x-k8s.io/provisioning-request``.

Third-party checks are written with the SDK in :mod:`pykueue.checks`.
"""

from __future__ import annotations

from pykueue.controllers.admissionchecks.provisioning import (
    CONTROLLER_NAME,
    ProvisioningCheckController,
    ProvisioningRequestController,
)

__all__ = ["CONTROLLER_NAME", "ProvisioningCheckController", "ProvisioningRequestController"]
