"""Admission Fair Sharing accounting (upstream ``pkg/cache/queue/afs`` and
``pkg/util/admissionfairsharing``): the per-LocalQueue usage ledger, entry penalties and the
decay and usage arithmetic."""

from pykueue.core.queue.afs.admission_fair_sharing import (
    ResourceList,
    calculate_decayed_consumed,
    calculate_entry_penalty,
    calculate_usage,
    lq_weight_as_float,
    merge_keep_sum,
    mul_by_float,
)
from pykueue.core.queue.afs.usage_ledger import AfsUsageLedger, UsageLedgerEntry

__all__ = [
    "AfsUsageLedger",
    "ResourceList",
    "UsageLedgerEntry",
    "calculate_decayed_consumed",
    "calculate_entry_penalty",
    "calculate_usage",
    "lq_weight_as_float",
    "merge_keep_sum",
    "mul_by_float",
]
