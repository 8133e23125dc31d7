"""Before any data: the posterior accuracy a release at ε gives, and the ε an accuracy needs."""
