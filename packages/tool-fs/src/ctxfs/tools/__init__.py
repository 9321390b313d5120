"""ctxfs tools: the model-facing file tools and their adapters.

The tools arrive with the tool-fs issue; the package exists now so that the
workspace, its lock file and its wheels are complete.
"""
