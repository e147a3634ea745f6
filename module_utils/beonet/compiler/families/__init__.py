"""The topology families, one module each; importing this package registers them
(see ``compiler.family``). ``ORDER`` is the order of the schema's list of
families and of their sections."""

from . import bonded, custom, mesh, metagraph, tree

ORDER = (bonded.FAMILY, mesh.FAMILY, tree.FAMILY, metagraph.FAMILY, custom.FAMILY)
