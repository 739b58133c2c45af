"""What several test modules share: slow references, oracles, strategies, paths."""
