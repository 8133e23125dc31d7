"""Pay once: the model transform that releases sufficient statistics, and its release plans."""
