"""A table's rows of a partition, in one place for every table: a source's answers through the table's normalizer."""
