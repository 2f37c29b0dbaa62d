"""`pmw demo`: the whole pipeline offline, on the in-process sandbox, then a look at what landed."""
