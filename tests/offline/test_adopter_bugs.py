"""The four realistic bug kinds an adopter's first week showed the offline engine missing (issue 22), each healed
end to end: a small project with its tests, real pytest in the real sandbox, the offline engine's default loop.

- a wrong dict key (`order["lnies"]`) -> key_replace
- a removed `is not None` check (`if self.coupon.active:`, an unguarded `logger.info(...)`) -> none_check
- an f-string with its fields in the wrong order -> field_swap
- a truthiness test where `is not None` was meant (`if timeout:`, `retries or 3`) -> none_test
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from selfix_action.offline.engine import OfflineEngine
from selfix_action.repair.loop import HealingLoop
from selfix_action.repair.report import StopReason
from selfix_action.sandbox.pytest_sandbox import PytestSandbox

ORDERS = {
    "shop/__init__.py": "",
    "shop/orders.py": '''"""Order summaries for the shop's daily report."""


def order_total(order):
    """The order's total: its lines' price times quantity, less its discount."""
    subtotal = sum(line["price"] * line["quantity"] for line in order["lines"])
    return round(subtotal - order.get("discount", 0), 2)


def summary(order):
    """One row of the daily report."""
    return {
        "customer": order["customer"],
        "items": sum(line["quantity"] for line in order["lnies"]),
        "total": order_total(order),
    }
''',
    "tests/test_orders.py": """from shop.orders import order_total, summary

ORDER = {
    "customer": "ada",
    "lines": [{"price": 2.5, "quantity": 2}, {"price": 1.0, "quantity": 3}],
    "discount": 1,
}


def test_total():
    assert order_total(ORDER) == 7.0


def test_summary():
    assert summary(ORDER) == {"customer": "ada", "items": 5, "total": 7.0}
""",
}

COUPONS = {
    "billing.py": '''"""Prices after coupons."""


class Coupon:
    def __init__(self, percent, active=True):
        self.percent = percent
        self.active = active


class Order:
    def __init__(self, amount, coupon=None):
        self.amount = amount
        self.coupon = coupon

    def discount(self):
        """The coupon's share of the amount, when the order has an active coupon."""
        if self.coupon.active:
            return self.amount * self.coupon.percent / 100
        return 0

    def price(self):
        return self.amount - self.discount()
''',
    "tests/test_billing.py": """from billing import Coupon, Order


def test_price_with_coupon():
    assert Order(200, Coupon(10)).price() == 180


def test_inactive_coupon():
    assert Order(200, Coupon(10, active=False)).price() == 200


def test_price_without_coupon():
    assert Order(200).price() == 200
""",
}

MAILER = {
    "mailer.py": '''"""Sending messages, with an optional audit log."""


class Outbox:
    def __init__(self):
        self.sent = []

    def send(self, to, body, log=None):
        """Queue a message; note it in `log` when one is given."""
        log.append(f"to {to}: {len(body)} chars")
        self.sent.append((to, body))
        return len(self.sent)
''',
    "tests/test_mailer.py": """from mailer import Outbox


def test_send_logs():
    log = []
    box = Outbox()
    assert box.send("ada", "hello", log) == 1
    assert log == ["to ada: 5 chars"]


def test_send_without_log():
    box = Outbox()
    assert box.send("ada", "hello") == 1
    assert box.sent == [("ada", "hello")]
""",
}

RECEIPT = {
    "receipt.py": '''"""Receipt lines."""


def receipt_line(name, quantity, price):
    """`3 x apple @ 0.50 = 1.50`"""
    return f"{name} x {quantity} @ {price:.2f} = {quantity * price:.2f}"


def receipt(items):
    return "\\n".join(receipt_line(*item) for item in items)
''',
    "tests/test_receipt.py": """from receipt import receipt, receipt_line


def test_line():
    assert receipt_line("apple", 3, 0.5) == "3 x apple @ 0.50 = 1.50"


def test_receipt():
    assert receipt([("pear", 1, 2.0)]) == "1 x pear @ 2.00 = 2.00"


def test_empty():
    assert receipt([]) == ""
""",
}

SETTINGS = {
    "settings.py": '''"""Connection settings read from a config mapping."""

DEFAULT_TIMEOUT = 30


def timeout(config):
    """The configured timeout in seconds; 0 means no timeout."""
    value = config.get("timeout")
    if value:
        return value
    return DEFAULT_TIMEOUT


def retries(config):
    return config.get("retries", 3)
''',
    "tests/test_settings.py": """from settings import retries, timeout


def test_configured_timeout():
    assert timeout({"timeout": 5}) == 5


def test_default_timeout():
    assert timeout({}) == 30
    assert timeout({"retries": 2}) == 30


def test_no_timeout():
    assert timeout({"timeout": 0}) == 0


def test_retries():
    assert retries({}) == 3
""",
}

LABELS = {
    "labels.py": '''"""Display labels."""


def label(item):
    """The item's title, or its id when it has no title ("" is a title: an untitled draft)."""
    title = item.get("title")
    return title or f"#{item['id']}"
''',
    "tests/test_labels.py": """from labels import label


def test_titled():
    assert label({"id": 7, "title": "Notes"}) == "Notes"


def test_untitled():
    assert label({"id": 7}) == "#7"


def test_empty_title_is_kept():
    assert label({"id": 7, "title": ""}) == ""
""",
}

CASES = {
    "wrong dict key": (ORDERS, "shop/orders.py", "key_replace", 'for line in order["lines"]),'),
    "removed None check in a test": (
        COUPONS,
        "billing.py",
        "none_check",
        "if self.coupon is not None and self.coupon.active:",
    ),
    "removed None check around a statement": (MAILER, "mailer.py", "none_check", "if log is not None:"),
    "f-string fields swapped": (RECEIPT, "receipt.py", "field_swap", "{quantity} x {name} @"),
    "truthiness for is not None": (SETTINGS, "settings.py", "none_test", "if value is not None:"),
    "or for a None default": (LABELS, "labels.py", "none_test", "title if title is not None else"),
}


# One real heal in the fast tier; each case is a heal of seconds, the others run in the slow tier.
@pytest.mark.parametrize(
    "case", [c if c == "wrong dict key" else pytest.param(c, marks=pytest.mark.slow) for c in sorted(CASES)]
)
def test_the_offline_engine_heals_the_adopters_bug(make_sandbox: Callable[..., PytestSandbox], case: str) -> None:
    files, path, template, fixed = CASES[case]
    report = HealingLoop(make_sandbox(files), OfflineEngine()).run().report
    assert report.stop_reason is StopReason.HEALED, report.explanation
    assert report.patch is not None and report.patch.files == (path,)
    assert report.patch.template == template, report.patch.diff
    added = [line[1:].strip() for line in report.patch.diff.splitlines() if line.startswith("+") and line[1:2] != "+"]
    assert any(fixed in line for line in added), report.patch.diff
