"""Draws: pmp.sample, exact posterior draws, private MAP and predictions."""
