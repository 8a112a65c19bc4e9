"""Plain helpers the test modules share: projects, scripted engines and model answers, fake servers, runners.

Fixtures stay in the ``conftest.py`` files (pytest's way of sharing them); a test module imports from here, never
from another test module or a ``conftest.py`` (``tests/test_suite_shape.py`` checks it).
"""
