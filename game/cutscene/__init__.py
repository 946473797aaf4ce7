"""Cutscenes: the document, the player over engine.Session, the renderer to video and its backends."""
