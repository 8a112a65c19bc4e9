"""The only package that talks to GitHub's REST API (through PyGithub); everything else sees plain values."""
