import sys

from beirx.cli import main

sys.exit(main())
