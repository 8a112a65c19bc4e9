"""A tiny shop: pricing rules and a shopping cart."""
