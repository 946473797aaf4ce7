"""engine.anim."""
