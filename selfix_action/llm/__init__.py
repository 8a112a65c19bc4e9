"""The LLM engine: Detective -> QA -> Patcher over a ``ChatModel`` (see ``selfix_action.providers``)."""
