"""engine.render."""
