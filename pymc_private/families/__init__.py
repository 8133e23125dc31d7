"""What a record can move: the likelihood contract, sufficient statistics and one object per
likelihood family."""
