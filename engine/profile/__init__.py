"""engine.profile."""
