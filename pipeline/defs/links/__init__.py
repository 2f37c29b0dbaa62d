"""The cross-platform links: `links.market_links`, matched over the latest markets of Polymarket and Kalshi."""
