"""What every CI front end shares, whatever its forge: the options of the table validated into settings
(``settings``), those settings as one ``HealRequest`` (``request``), and selfix's own git (``gitops``). The
GitHub Action (``action/``) and the GitLab job (``gitlab_ci/``) each add only their forge's context, API and
event format; neither imports the other (an import-linter contract)."""
