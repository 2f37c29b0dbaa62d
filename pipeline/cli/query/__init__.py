"""`pmw query`: one SQL statement on the warehouse, read-only; its helpers serve `pmw shell` too."""
