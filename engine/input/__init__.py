"""engine.input."""
