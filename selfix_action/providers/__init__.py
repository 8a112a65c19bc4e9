"""Model adapters: the only code that talks to provider SDKs (``anthropic``, ``openai``).

``base`` holds the small ``ChatModel`` interface the LLM engine uses; ``sdk`` what both SDK adapters share (the
client, the preflight, a request's deadline, the SDK's errors as ``ModelError``), so that each adapter file holds
only its wire format. The adapters import their SDK, so import them only when that provider is selected (see
``selfix_action.llm.factory``).
"""
