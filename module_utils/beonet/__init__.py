"""beonet: declarative network topologies for Beowulf-class Linux clusters."""

__version__ = "0.2.0"
