"""The companion module's version (pyproject.toml reads it; probe results carry it)."""
__version__ = "0.1.0"
