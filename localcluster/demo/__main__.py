"""``python -m localcluster.demo``: the demo (see ``localcluster.demo.show``)."""

import sys

from localcluster.demo.show import main

sys.exit(main())
