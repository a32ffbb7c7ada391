"""Players across races, pure: ratings (openskill) and the figures of a profile."""
