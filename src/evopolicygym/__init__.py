"""EvoPolicyGym."""
