"""Orderbook snapshot rounds: the asset that takes them and the schedule that asks for them."""
