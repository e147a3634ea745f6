"""The labs: Docker containers (docker.py) and QEMU VMs (vm.py), sharing base.py."""

# The VM lab's base images (scripts/build-vm-image.sh), named after the network
# manager each boots with.
VM_IMAGES = ("networkd", "nm", "netplan", "ifupdown")
