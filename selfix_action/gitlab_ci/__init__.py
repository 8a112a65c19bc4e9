"""``selfix gitlab``: the GitLab CI front end. A job in a stage after the tests (``when: on_failure``) reads the
pipeline's ``CI_*`` variables and the options' ``SELFIX_<NAME>`` variables (``settings``), finds the failed jobs'
JUnit reports (the job's artifacts from ``needs``), heals through ``heal()`` like every front end, plans with
``publish.policy`` and publishes with ``publisher`` (a fix branch and a merge request, or one note per failure)."""
