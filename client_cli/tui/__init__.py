"""``tripeaks play``: the full-screen terminal app (Textual), one module per screen."""
