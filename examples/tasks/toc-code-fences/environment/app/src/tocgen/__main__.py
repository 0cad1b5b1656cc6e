import sys

from tocgen.cli import main

sys.exit(main())
