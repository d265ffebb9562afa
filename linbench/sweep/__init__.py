"""What to run: the range grammar, TOML suites, and the expansion of axes into points."""
