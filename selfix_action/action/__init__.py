"""The GitHub Action: events, locating the failure, the publish policy and the one publisher (see runner.py)."""
