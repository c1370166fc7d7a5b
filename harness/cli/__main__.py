"""`python -m harness.cli`: the netrepro command."""

import sys

from harness.cli.main import main

sys.exit(main())
