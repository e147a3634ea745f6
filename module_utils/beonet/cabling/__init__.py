"""The cabling sheet: every cable of a compiled topology with both of its ends."""
