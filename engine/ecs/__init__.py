"""engine.ecs."""
