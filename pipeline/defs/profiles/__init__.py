"""Trader profiles: the assets that land the watched traders and the schedule that asks for them."""
