"""The compiler: a topology file in, a proven graph out (see pipeline.py for the stages)."""
