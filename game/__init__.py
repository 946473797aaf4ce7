"""The demo scene, editing tools and panels."""
