"""The code location's assets as the test process's environment builds them when first imported, as the code
location builds them when it loads (pipeline.definitions.build_definitions): the tests' PMW_START_DATE
(tests/conftest.py) and the default platforms. Runs read their own settings when they start, from the environment
each test sets."""

from pipeline.defs.ingestion.assets import ingestion_assets, ingestion_partitions
from pipeline.defs.ingestion.platform_status import platform_status_asset
from pipeline.defs.orderbooks.assets import orderbook_round_asset
from pipeline.defs.profiles.assets import trader_profiles_asset
from pipeline.defs.sports.assets import sports_assets
from pipeline.engine.config import Settings

SETTINGS = Settings.from_env(credentials=False)
PARTITIONS = ingestion_partitions(SETTINGS)
INGESTION_ASSETS = ingestion_assets(SETTINGS)
platform_status = platform_status_asset(SETTINGS)
orderbook_round = orderbook_round_asset(SETTINGS)
trader_profiles = trader_profiles_asset(SETTINGS)
SPORTS_ASSETS = sports_assets(SETTINGS)
future_odds = next(asset for asset in SPORTS_ASSETS if asset.node_def.name == "future_odds")
