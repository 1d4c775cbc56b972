"""`python -m gateway`: the same as `coordinator gateway`."""

import sys

from gateway.cli import main

sys.exit(main())
