"""The command line: the shell in main.py, one module per tool; families add their own verbs."""

from .main import main

__all__ = ["main"]
