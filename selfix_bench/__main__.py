"""``python -m selfix_bench ARGS``: the same as ``selfix bench ARGS`` (the product's error handling and exit codes)."""

import sys

from selfix_action.cli import main

sys.exit(main(["bench", *sys.argv[1:]]))
