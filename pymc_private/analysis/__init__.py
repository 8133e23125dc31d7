"""What the graph says before any data: L, Δ₁, the leak guard, record separation and the routes'
costs."""
