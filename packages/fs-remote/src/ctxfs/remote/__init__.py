"""ctxfs remote: object-store and SFTP backends over fsspec, with native compare-and-swap.

The backends arrive with the fs-remote issue; the package exists now so that
the workspace, its lock file and its wheels are complete.
"""
