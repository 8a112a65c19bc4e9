"""Caps on what the LLM engine may spend: calls, tokens, dollars and wall time.

Checked before every model call; when a cap is reached the engine raises ``EngineStopped`` and the loop stops
with a named reason (``budget_exhausted``, or ``time_limit`` for the wall clock). A cap <= 0 means no cap.
Dollars come from a per-model price table (USD per million tokens) the user can override or complete with this
run's model's price; a model with no known price (a local server, a new model) counts 0 and the usage says the
price is unknown, so a dollar cap for it is refused before the run (``llm.factory``) rather than never enforced.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from selfix_action.errors import InputError
from selfix_action.providers.base import TokenUsage
from selfix_action.repair.protocols import EngineStopped
from selfix_action.repair.report import PricePerMillion, RoleUsage, StopReason, Usage, UsageLimits

ROLES = ("detective", "qa", "patcher")


@dataclass(frozen=True)
class Price:
    """USD per million tokens."""

    input: float
    output: float
    cache_read: float
    cache_write: float

    def cost(self, usage: TokenUsage) -> float:
        return (
            usage.input_tokens * self.input
            + usage.output_tokens * self.output
            + usage.cache_read_tokens * self.cache_read
            + usage.cache_write_tokens * self.cache_write
        ) / 1_000_000


def _anthropic(input: float, output: float) -> Price:
    # Anthropic bills 5-minute cache writes at 1.25x and cache reads at 0.1x the input price.
    return Price(input, output, round(input * 0.1, 6), round(input * 1.25, 6))


def _openai(input: float, output: float, cached: float) -> Price:
    return Price(input, output, cached, input)


# Public list prices as of late 2025; matched by longest model-name prefix. Override with ``prices``.
DEFAULT_PRICES: dict[str, Price] = {
    "claude-opus-4-5": _anthropic(5.0, 25.0),
    "claude-opus-4": _anthropic(15.0, 75.0),
    "claude-sonnet-4": _anthropic(3.0, 15.0),
    "claude-3-7-sonnet": _anthropic(3.0, 15.0),
    "claude-haiku-4": _anthropic(1.0, 5.0),
    "claude-3-5-haiku": _anthropic(0.8, 4.0),
    "gpt-5-mini": _openai(0.25, 2.0, 0.025),
    "gpt-5-nano": _openai(0.05, 0.4, 0.005),
    "gpt-5": _openai(1.25, 10.0, 0.125),
    "gpt-4.1-mini": _openai(0.4, 1.6, 0.1),
    "gpt-4.1-nano": _openai(0.1, 0.4, 0.025),
    "gpt-4.1": _openai(2.0, 8.0, 0.5),
    "gpt-4o-mini": _openai(0.15, 0.6, 0.075),
    "gpt-4o": _openai(2.5, 10.0, 1.25),
}


def parse_prices(prices: Mapping[str, Any] | None) -> dict[str, Price]:
    """User overrides, USD per million tokens: ``{model_prefix: {"input": x, "output": y, "cache_read": z,
    "cache_write": w}}`` (cache prices default to the input price) or ``{model_prefix: [input, output]}``."""
    table: dict[str, Price] = {}
    for name, value in (prices or {}).items():
        try:
            if isinstance(value, Price):
                table[name] = value
            elif isinstance(value, Mapping):
                unknown = set(value) - {"input", "output", "cache_read", "cache_write"}
                if unknown:
                    raise ValueError(f"unknown key(s) {sorted(unknown)}")
                inp, out = float(value["input"]), float(value["output"])
                read = float(value.get("cache_read", inp))
                write = float(value.get("cache_write", inp))
                table[name] = Price(inp, out, read, write)
            else:
                inp, out = (float(v) for v in value)
                table[name] = Price(inp, out, inp, inp)
        except (KeyError, TypeError, ValueError) as exc:
            raise InputError(
                f"price for {name!r} must be {{input, output[, cache_read, cache_write]}} in USD per "
                f"million tokens: {exc}"
            ) from exc
        if min(table[name].input, table[name].output) < 0:
            raise InputError(f"price for {name!r} is negative")
    return table


def price_for(model: str, prices: Mapping[str, Any] | None = None) -> Price | None:
    """The user's price for ``model`` if any, else the default; longest matching prefix wins."""
    for table in (parse_prices(prices), DEFAULT_PRICES):
        matches = [name for name in table if model == name or model.startswith(name)]
        if matches:
            return table[max(matches, key=len)]
    return None


@dataclass
class _Tally:
    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cost_usd: float = 0.0
    seconds: float = 0.0  # wall time waiting for the model's answers

    def add(self, usage: TokenUsage, cost: float, seconds: float = 0.0) -> None:
        self.calls += 1
        self.seconds += seconds
        self.input_tokens += usage.input_tokens
        self.output_tokens += usage.output_tokens
        self.cache_read_tokens += usage.cache_read_tokens
        self.cache_write_tokens += usage.cache_write_tokens
        self.cost_usd += cost

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens + self.cache_read_tokens + self.cache_write_tokens

    def as_role(self) -> RoleUsage:
        return RoleUsage(
            calls=self.calls,
            input_tokens=self.input_tokens,
            output_tokens=self.output_tokens,
            cache_read_tokens=self.cache_read_tokens,
            cache_write_tokens=self.cache_write_tokens,
            tokens=self.tokens,
            cost_usd=round(self.cost_usd, 6),
            model_seconds=round(self.seconds, 3),
        )


class Budget:
    """Counts every call per role and refuses the next one once a cap is reached."""

    def __init__(
        self,
        *,
        model: str,
        max_calls: int = 40,
        max_tokens: int = 400_000,
        max_cost_usd: float = 2.0,
        time_limit: float = 900.0,
        prices: Mapping[str, Any] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.model = model
        self.max_calls = max_calls
        self.max_tokens = max_tokens
        self.max_cost_usd = max_cost_usd
        self.time_limit = time_limit
        self.price = price_for(model, prices)
        self._clock = clock
        self._started = clock()
        self.total = _Tally()
        self.by_role: dict[str, _Tally] = {role: _Tally() for role in ROLES}
        self.retries = 0
        self.invalid_answers = 0
        self.asks = 0  # asks for more context answered (the Detective's and the Patcher's, llm.asks)

    def elapsed(self) -> float:
        return self._clock() - self._started

    def check(self, role: str) -> None:
        """Raise ``EngineStopped`` if another ``role`` call would go over a cap."""
        spent = self.total
        if self.time_limit > 0 and self.elapsed() >= self.time_limit:
            raise EngineStopped(
                StopReason.TIME_LIMIT,
                f"LLM time limit of {self.time_limit:g}s reached before the {role} call ({spent.calls} call(s) made)",
            )
        if self.max_calls > 0 and spent.calls >= self.max_calls:
            raise EngineStopped(
                StopReason.BUDGET_EXHAUSTED,
                f"LLM call budget of {self.max_calls} call(s) spent before the {role} call",
            )
        if self.max_tokens > 0 and spent.tokens >= self.max_tokens:
            raise EngineStopped(
                StopReason.BUDGET_EXHAUSTED,
                f"LLM token budget spent before the {role} call: {spent.tokens} of {self.max_tokens} tokens",
            )
        if self.max_cost_usd > 0 and spent.cost_usd >= self.max_cost_usd:
            raise EngineStopped(
                StopReason.BUDGET_EXHAUSTED,
                f"LLM cost budget spent before the {role} call: ${spent.cost_usd:.4f} of ${self.max_cost_usd:.2f}",
            )

    def time_left(self) -> float | None:
        """Seconds left of the time limit (None: no limit): no single call may take longer."""
        if self.time_limit <= 0:
            return None
        return max(0.0, self.time_limit - self.elapsed())

    def calls_left(self) -> int | None:
        """Calls left under the call cap (None: no cap)."""
        if self.max_calls <= 0:
            return None
        return max(0, self.max_calls - self.total.calls)

    def output_allowance(self, wanted: int) -> int:
        """Output tokens to request: ``wanted``, or less when the token budget has less left (at least a small
        answer, never more than ``wanted``)."""
        if self.max_tokens <= 0:
            return wanted
        return min(wanted, max(256, self.max_tokens - self.total.tokens))

    def record(self, role: str, usage: TokenUsage, seconds: float = 0.0) -> float:
        cost = self.price.cost(usage) if self.price else 0.0
        self.total.add(usage, cost, seconds)
        self.by_role.setdefault(role, _Tally()).add(usage, cost, seconds)
        return cost

    def usage(self) -> Usage:
        """The counts so far; the engine adds its model, its provider and what else it knows (``LLMEngine``)."""
        price = (
            PricePerMillion(
                input=self.price.input,
                output=self.price.output,
                cache_read=self.price.cache_read,
                cache_write=self.price.cache_write,
            )
            if self.price
            else None
        )
        return Usage(
            **self.total.as_role().model_dump(),
            by_role={role: tally.as_role() for role, tally in self.by_role.items()},
            retries=self.retries,
            invalid_answers=self.invalid_answers,
            asks=self.asks,
            elapsed_seconds=round(self.elapsed(), 3),
            price_per_million_tokens=price,
            price_known=self.price is not None,
            limits=UsageLimits(
                max_calls=self.max_calls,
                max_tokens=self.max_tokens,
                max_cost_usd=self.max_cost_usd,
                time_limit_seconds=self.time_limit,
            ),
        )
