"""The benchmark: bug-injected tasks over real libraries, a resumable parallel runner, and its statistics.

``tasks`` (task files, materializing repos from pinned sdists), ``generate`` (the bug-injection generator),
``runner`` (``selfix bench``), ``stats`` (Wilson interval, exact McNemar), ``report`` (report.md + SVG chart),
``speed`` (side-by-side validation speed against the naive path).
"""
