"""The benchmark of selfix: bug-injected and real-bug tasks, a resumable parallel runner, its statistics and the
measurement scripts. A package of its own: it imports ``selfix_action``, never the reverse, and the action's image
does not hold it (a source install does: ``pip install -e .``).

``base`` (the ``BenchTask`` protocol), ``tasks`` and ``realbugs`` (the two kinds), ``kinds`` (a task file of
either), ``healing`` (heals through the product's pipeline), ``cli``/``runner``/``worker`` (``selfix bench``),
``stats`` and ``report``; ``python -m selfix_bench.<module>`` runs each measurement (docs/BENCHMARK.md).
"""
