"""selfix: self-healing CI. Turns failing tests into a minimal, verified patch."""

__version__ = "0.1.0"
