"""Command implementations behind main.py (inspect, export-frame, render, compare, doctor)."""
