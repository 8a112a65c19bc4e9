"""The GitLab REST v4 client: the only package that imports python-gitlab (``gitlab``)."""
