"""Model adapters: the only code that talks to provider SDKs (``anthropic``, ``openai``).

``base`` holds the small ``ChatModel`` interface the LLM engine uses; the adapters import their SDK, so
import them only when that provider is selected (see ``selfix_action.llm.factory``).
"""
