"""values."""
