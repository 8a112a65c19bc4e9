"""What varies by language and test runner, behind one seam (issue 34): finding the project, naming a test from
its CI report, and the command that runs that one test. Python's half still lives in ``sandbox/`` and
``repair/reported.py``; ``node`` is the JavaScript/TypeScript half, pure so far (no process is started here)."""
