"""What drives and watches the system under test: the Go load generator, the real extender on
loopback, the bind watch, processes' CPU time, the machine. Imports no other layer of ``bench``."""
