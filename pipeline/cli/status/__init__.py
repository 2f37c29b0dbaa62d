"""`pmw status`: what has landed, what is missing, which checks failed and whether yesterday is fresh."""
