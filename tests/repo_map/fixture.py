"""A small shop written for these tests: five Python modules that call each other, a
JavaScript file (read by the generic tagger), and a README (a file without definitions)."""

from __future__ import annotations

from pathlib import Path

FILES = {
    "shop/models.py": '''\
class LineItem:
    def __init__(self, sku, quantity, unit_price):
        self.sku = sku
        self.quantity = quantity
        self.unit_price = unit_price

    def subtotal(self):
        return self.quantity * self.unit_price


class Order:
    def __init__(self, customer):
        self.customer = customer
        self.items = []

    def add_item(self, sku, quantity, unit_price):
        self.items.append(LineItem(sku, quantity, unit_price))

    def order_total(self):
        return sum(item.subtotal() for item in self.items)


def _debug_dump(order):
    return repr(order.items)
''',
    "shop/tax.py": '''\
RATES = {"eu": 0.2, "us": 0.07}


def compute_tax(amount, region):
    return round(amount * RATES.get(region, 0.0), 2)


def tax_exempt(customer):
    return customer.startswith("gov-")
''',
    "shop/pricing.py": '''\
from shop.models import Order
from shop.tax import compute_tax, tax_exempt


def apply_discount(order, percent):
    total = order.order_total()
    return total - total * percent / 100


def final_price(order, region, percent=0):
    price = apply_discount(order, percent)
    if tax_exempt(order.customer):
        return price
    return price + compute_tax(price, region)
''',
    "shop/cli.py": '''\
import sys

from shop.models import Order
from shop.pricing import final_price


def parse_line(line):
    sku, quantity, price = line.split(",")
    return sku, int(quantity), float(price)


def main(argv):
    order = Order(argv[1])
    for line in sys.stdin:
        order.add_item(*parse_line(line))
    print(final_price(order, argv[2]))
''',
    "shop/reports.py": '''\
from shop.tax import compute_tax


def monthly_report(sales):
    return {month: compute_tax(amount, "eu") for month, amount in sales.items()}


def yearly_summary(sales):
    return sum(monthly_report(sales).values())
''',
    "web/cart.js": '''\
class CartView {
  render(items) {
    return items.map((item) => formatPrice(item.price)).join("\\n");
  }
}

function formatPrice(amount) {
  return amount.toFixed(2);
}
''',
    "README.md": "# shop\\n\\nA small shop.\\n",
}


def write_shop(root: Path) -> list[str]:
    """The fixture under `root`; its files, relative, sorted."""
    for name, text in FILES.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return sorted(FILES)
