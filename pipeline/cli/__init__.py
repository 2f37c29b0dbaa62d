"""`pmw`: the command line (main.py) and its commands that have a module of their own."""
