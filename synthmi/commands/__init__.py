"""One module per CLI verb; each defines ``register(subparsers)``.

Shared helpers for verbs live in :mod:`synthmi.commands._common`.
"""
