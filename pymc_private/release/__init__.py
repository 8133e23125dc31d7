"""What leaves: sealed InferenceData, synthetic data and the privacy report."""
