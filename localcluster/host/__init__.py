"""What the local run needs from the machine: child processes, loopback ports, health probes,
certificates, deadlines and the built images. Imports nothing else of ``localcluster``."""
