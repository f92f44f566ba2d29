"""``python -m pykueue``."""

import sys

from pykueue.cli.main import main

sys.exit(main())
