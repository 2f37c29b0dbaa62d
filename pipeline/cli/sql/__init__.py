"""`pmw sql`: the dbt_like_sql models built through Dagster, with their SQL tests."""
