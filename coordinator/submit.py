"""spark-submit entry point: `spark-submit --properties-file conf/spark-defaults.conf coordinator/submit.py run ...`.

Same flags as `coordinator run`; settings given to spark-submit win over conf/spark-defaults.conf. The project must
be importable by the driver's Python (installed, as `pip install -e .` does, or shipped with --py-files).
"""

import sys

from coordinator.cli import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
