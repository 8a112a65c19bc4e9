"""``selfix mcp``: selfix's sandboxed tools served over the Model Context Protocol (stdio).

The only package that imports the ``mcp`` SDK (an import-linter contract says so). A front end: each tool turns
its arguments into the server's ``HealRequest`` (fixed at start: the repository, the test command, the
isolation and limits of ``selfix fix``) and calls the heal pipeline (``heal()``, ``heal.given.verify_patch``,
``heal.probe``); the outcome comes back as a typed result, an error as a result too.
"""
