"""The labs: Docker containers (docker.py) and QEMU VMs (vm.py), sharing base.py."""

from ..agent.netbackends import NAMES

# The VM lab's base images (scripts/build-vm-image.sh), one per network backend, named
# after it (the registry's names; the node role detects the backend each boots with).
VM_IMAGES = NAMES
