"""Built-in policies, each a pluggy plugin and a model for third-party ones.

Register them on an ``Fs`` (``Fs(backend, plugins=[...])``) or through the
entry point group ``ctxfs.plugins`` (a module or an instance)::

    Fs(backend, plugins=[
        PathRules(deny=[".git", ".env"], read_only=["vendor/**"]),
        MaxFileSize(1_000_000),
        IntegrationSwitch(integrations, key_of=docs_or_none, keys=["docs"]),
        CheckOuts(lease_book),
        AuditLedger("/var/log/ctxfs/audit.jsonl"),
    ])

Every refusal happens in ``ctxfs_authorize``, before anything is locked, read or
written.
"""

from ctxfs.core.policies.audit import AuditLedger
from ctxfs.core.policies.checkouts import CheckOuts, Lease, LeaseBook, Leases
from ctxfs.core.policies.paths import PathRules, fold_name
from ctxfs.core.policies.size import MaxFileSize
from ctxfs.core.policies.switch import Integrations, IntegrationSwitch, StaticIntegrations

__all__ = [
    "AuditLedger",
    "CheckOuts",
    "IntegrationSwitch",
    "Integrations",
    "Lease",
    "LeaseBook",
    "Leases",
    "MaxFileSize",
    "PathRules",
    "StaticIntegrations",
    "fold_name",
]
