"""`python -m gateway`: the same as `coordinator gateway`."""

import sys

from gateway.front.cli import main

sys.exit(main())
