"""Where the checkout and the recorded platform responses are."""

from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
FIXTURES = REPO_ROOT / "tests" / "fixtures"
# What a wheel of the project is built from, and what deploy/Dockerfile copies into the image.
SHIPPED = ("pyproject.toml", "README.md", "pipeline", "pmw_sandbox", "dbt_like_sql")
