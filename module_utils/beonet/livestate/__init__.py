"""The live-state proof: every ordered pair walked through the routing tables the
nodes' kernels hold, on the controller (state.py: the collected state checked and
parsed; nft.py: the forward filter judged; tables.py: the compiler's tables made
from it; walk.py: the walk against the plan; report.py: the diagnosis; sample.py:
the pairs traceroute checks end to end; synthetic.py: a plan as a node would
report it). The nodes' half is agent/collect.py."""
