"""What a fix or an escalation says and where it goes, for every forge: ``render`` (titles, bodies, notes: the
evidence of a heal), ``policy`` (outcome + options -> a ``PublishPlan``) and ``values``. Pure: no git, no API;
each forge's publisher (``action/publisher.py`` for GitHub, ``gitlab_ci/publisher.py`` for GitLab) carries a plan
out."""
