"""The contract between `runner` and `sitegen`: the bundle, its display facts, and redaction.

This package imports msgspec and the standard library only, never the rest of the runner, so
sitegen (and anyone reading bundles) can use it without the runner's HTTP stack. Nothing else
crosses between runner and sitegen.
"""
