"""The application above the engine: the command line (``cli.py``), the command bodies (``commands/``), the
editor (``editor/``), the demo (``demo.py``) and the imgui layer shared by every window (``ui/``). The engine
never imports this package (tests/unit/test_layout.py)."""
