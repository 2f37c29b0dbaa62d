"""dbt_like_sql: the SQL project (project.py), its builds (build.py) and `pmw sql` (run.py)."""
