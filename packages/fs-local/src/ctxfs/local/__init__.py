"""ctxfs local: the local-disk backend, confined to its root by the kernel.

The backend itself arrives with the fs-local issue; the package exists now so
that the workspace, its lock file and its wheels are complete.
"""
