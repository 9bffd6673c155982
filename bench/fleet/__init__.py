"""What a benchmark puts on the system under test: realistic EKS GPU nodes, GPU pods and the
request bodies built from them. Imports no other layer of ``bench``."""
