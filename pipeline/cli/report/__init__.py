"""`pmw report`: the marts as charts in one HTML page that opens without a network."""
