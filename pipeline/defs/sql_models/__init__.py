"""The SQL models of dbt_like_sql as Dagster assets, with their tests as asset checks."""
